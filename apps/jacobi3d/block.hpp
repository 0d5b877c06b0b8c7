#pragma once
// One cuboid block of the Jacobi3D grid: a kodo work unit.
//
// A block holds two padded arrays (one ghost layer). At iteration n it reads A[n % 2]
// and writes the interior of A[(n + 1) % 2]. A neighbour is at most one iteration
// ahead (it cannot finish iteration n + 1 without our faces of n + 1), so a face for
// iteration n lands straight in the ghost layer of A[n % 2]: the update never writes
// ghosts, and no face for n + 2 can arrive while A[n % 2] is still being read.

#include "kernels.hpp"

#include <kodo.hpp>

#include <array>
#include <cstdint>

namespace jacobi {

// Rank-local results that blocks hand back to the main program.
struct RankReport {
  std::uint64_t checksum = 0;
  bool have_checksum = false;
};

class JacobiBlock : public kodo::WorkUnit<JacobiBlock> {
 public:
  JacobiBlock(const kodo::UnitInit<JacobiBlock>& init, const Grid& grid, RankReport* report);

  // Entry methods.
  void iterate(std::int64_t count);  // run `count` more iterations
  void receive_face(std::int64_t iteration, int face, Field data);
  void compute_checksum();  // once the iterations asked for so far are done
  void checksum_done(std::uint64_t checksum);

 private:
  void advance();
  void contribute_checksum();
  void send_faces();

  Grid grid_;
  RankReport* report_;
  BlockShape shape_;
  std::int64_t origin_[3];  // global coordinates of the first interior point
  Field field_[2];
  Field send_buffer_[6];
  std::array<bool, 6> has_neighbour_{};
  int neighbours_ = 0;
  std::int64_t iteration_ = 0;   // the next update to run
  std::int64_t target_ = 0;      // run updates while iteration_ < target_
  std::int64_t faces_sent_for_ = -1;
  int received_[2] = {0, 0};     // faces in hand for iterations of each parity
  bool checksum_requested_ = false;
};

}  // namespace jacobi
