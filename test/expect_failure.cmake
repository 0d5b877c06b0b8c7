# Runs COMMAND ('|'-separated) and passes when it exits non-zero, in time, with output
# matching EXPECT.
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
message("exit: ${rc}\n${out}${err}")
if(rc STREQUAL "0")
  message(FATAL_ERROR "expected a failure, but the command succeeded")
endif()
if(rc MATCHES "timeout|Process terminated")
  message(FATAL_ERROR "the command hung: ${rc}")
endif()
string(FIND "${out}${err}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the output does not contain: ${EXPECT}")
endif()
