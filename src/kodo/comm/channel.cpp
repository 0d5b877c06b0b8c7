// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/comm/channel.hpp>

#include <kodo/comm/detail/channel_end.hpp>

namespace kodo {

CommMode parse_comm_mode(std::string_view text) {
  if (text == "device") return CommMode::device;
  if (text == "host") return CommMode::host_staged;
  throw Error("unknown communication mode '" + std::string(text) + "' (expected device or host)");
}

const char* to_string(CommMode mode) { return mode == CommMode::device ? "device" : "host"; }

Channel::Channel(detail::ChannelHost& host, const detail::LinkSpec& l) {
  const std::int64_t self = l.shape.linear(l.self), peer = l.shape.linear(l.peer);
  const int send_port = l.send_port < 0 ? l.port : l.send_port;
  std::ostringstream problem;
  if (!l.shape.contains(l.peer))
    problem << "a channel from unit " << l.self << " names unit " << l.peer
            << ", outside its collection of shape " << l.shape;
  else if (l.peer == l.self && send_port == l.port)
    problem << "a channel needs two different units, not unit " << l.self << " twice";
  else if (l.port < 0)
    problem << "a channel port must not be negative, not " << l.port;
  if (!problem.str().empty()) throw Error(problem.str());

  auto end = std::make_shared<detail::ChannelEnd>();
  end->host = &host;
  end->link = l;
  end->receives_on = {l.collection, self, peer, l.port};
  end->sends_on = {l.collection, peer, self, send_port};
  detail::ChannelRegistry& registry = host.channels();
  if (registry.senders.count(end->sends_on))
    throw Error("two channels open on one " + end->describe(true));
  if (end->local()) {
    auto [it, inserted] = registry.local_receivers.try_emplace(end->receives_on, end.get());
    if (!inserted) throw Error("two channels open on one " + end->describe(false));
    registry.senders.emplace(end->sends_on, end.get());
    // Sends the peer made before this end opened.
    if (const auto peer = registry.senders.find(end->receives_on); peer != registry.senders.end()) {
      auto& waiting = peer->second->unnumbered;
      for (; !waiting.empty(); waiting.pop_front())
        end->arrived.push_back(std::move(waiting.front()));
    }
  } else {
    const std::uint32_t number = registry.receive_number(end->receives_on);
    end->recv_base = std::uint64_t{number} << detail::kNumberBits;
    end->epoch = ++registry.openings[end->sends_on];
    if (const auto known = registry.send_numbers.find(end->sends_on);
        known != registry.send_numbers.end())
      end->send_base = std::uint64_t{known->second} << detail::kNumberBits;
    registry.senders.emplace(end->sends_on, end.get());
    // A ring opened on this end may take the same-node route: the peer's sends wait to
    // learn (offer_ring, or choose_ucx_receives).
    const bool may_ring = host.node() && host.node()->reaches(l.peer_rank) &&
                          l.mode == CommMode::device;
    end->recv_route = may_ring ? detail::Route::pending : detail::Route::ucx;
    // The peer's sends need our number of the link; it is announced once per opening.
    host.post(l.peer_rank,
              detail::announcement_message({end->receives_on, number, end->epoch, may_ring},
                                           host.rank()));
    // A ring opened before the loop's next message (in the same constructor or entry
    // method) takes the route; otherwise the peer's sends go by UCX, without waiting.
    if (may_ring) {
      host.expect_event();
      host.queue_callback([weak = std::weak_ptr<detail::ChannelEnd>(end)] {
        if (const auto e = weak.lock(); e && !e->closed && e->recv_route == detail::Route::pending)
          e->choose_ucx_receives("");
      });
    }
  }
  registry.open.insert(end.get());
  end_ = std::move(end);
  try {
    end_->settle_send_route();  // the peer may have spoken already
  } catch (...) {
    end_->close();
    throw;
  }
}

Channel::Channel(Channel&&) noexcept = default;
Channel& Channel::operator=(Channel&& other) noexcept {
  if (this != &other) {
    if (end_) end_->close();
    end_ = std::move(other.end_);
  }
  return *this;
}
Channel::~Channel() {
  if (end_) end_->close();
}

bool Channel::is_local() const { return end_ && end_->local(); }

void Channel::send_segment(detail::Segment data, std::shared_ptr<const void> keep,
                           std::function<void()> sent, bool ready) {
  if (!end_) throw Error("send on a channel that is not open");
  end_->send({data, std::move(keep), std::move(sent), ready});
}

void Channel::recv_segment(detail::Segment into, std::shared_ptr<const void> keep,
                           std::size_t element, bool exact,
                           std::function<void(std::size_t)> received) {
  if (!end_) throw Error("receive on a channel that is not open");
  if (end_->ring)
    throw Error(end_->describe(false) + ": a receive ring owns this channel's receives");
  end_->recv({into, std::move(keep), element, exact, std::move(received)});
}

}  // namespace kodo
