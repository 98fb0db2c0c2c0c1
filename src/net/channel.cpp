// Remote channels: the cluster's directory, the inlet's senders and credit,
// the outlet's destinations and credit (see include/troupe/net/channel.hpp).
#include "troupe/net/channel.hpp"

#include <algorithm>
#include <map>

namespace troupe::net {

namespace detail {

void register_channel_messages() {
  static const bool once = [] {
    add_type<chan_open_atom>("troupe.chan_open");
    add_type<chan_data_atom>("troupe.chan_data");
    add_type<chan_end_atom>("troupe.chan_end");
    add_type<chan_credit_atom>("troupe.chan_credit");
    add_message<chan_open_atom, std::uint64_t, std::uint32_t, actor>();
    add_message<chan_end_atom, std::uint64_t, std::uint64_t>();
    add_message<chan_credit_atom, std::uint32_t, std::uint64_t, std::uint64_t>();
    return true;
  }();
  (void)once;
}

namespace {
std::string sender_name(std::uint64_t id) {
  return "sender " + std::to_string(id & 0xffffffffU) + " of rank " + std::to_string(id >> 32);
}
std::string reason_of(const error& e) { return e ? e.to_string() : std::string{"ended normally"}; }
}  // namespace

// --------------------------------------------------------- owned mailbox

/// The actor of an owned_mailbox: a mailbox that no worker runs.
class owned_cell final : public actor_cell {
 public:
  owned_cell(actor_system& sys, std::shared_ptr<owned_mailbox::signal> s) : actor_cell{sys}, signal_{std::move(s)} {
    drop_spawn_token();
  }
  troupe::detail::resume_result resume(std::size_t) override { return troupe::detail::resume_result::done; }
  troupe::detail::message_node* take() noexcept { return pop(); }
  std::size_t settle_taken(std::size_t n) noexcept {
    bool freed = false;
    return settle(n, freed);
  }
  void end(const error& why) noexcept { terminate(why, 0); }

 protected:
  // A sender's message keeps the cell (and so the signal) alive meanwhile.
  void wake() noexcept override { signal_->notify(); }

 private:
  std::shared_ptr<owned_mailbox::signal> signal_;
};

owned_mailbox::owned_mailbox(actor_system& sys)
    : signal_{std::make_shared<signal>()}, cell_{new owned_cell{sys, signal_}}, handle_{cell_, false} {}

owned_mailbox::~owned_mailbox() {
  if (!ended_) end(error{});
}

troupe::detail::message_node* owned_mailbox::take() noexcept { return cell_->take(); }
std::size_t owned_mailbox::settle(std::size_t n) noexcept { return cell_->settle_taken(n); }

void owned_mailbox::end(const error& why) {
  if (ended_) return;
  ended_ = true;
  // Drains what is left as dead letters and tells the monitors.
  cell_->end(why);
}

void owned_mailbox::signal::notify() noexcept {
  mail.store(true);
  if (waiting.load()) {
    {
      std::lock_guard<std::mutex> lock{mtx};
    }  // the owner is in wait_until, or sees `mail`
    cv.notify_one();
  }
}

void owned_mailbox::wait(std::chrono::steady_clock::time_point until) {
  auto& s = *signal_;
  // Mail usually follows soon while a stream flows: poll for a few tens of
  // microseconds (yielding the core) before sleeping, so that neither side
  // pays for a futex wake-up per batch.
  const auto spin_until = std::min(until, std::chrono::steady_clock::now() + std::chrono::microseconds{30});
  for (unsigned i = 0;; ++i) {
    if (s.mail.exchange(false)) return;
    if ((i & 7) == 7 && std::chrono::steady_clock::now() >= spin_until) break;
    std::this_thread::yield();
  }
  s.waiting.store(true);
  if (!s.mail.exchange(false)) {
    std::unique_lock<std::mutex> lock{s.mtx};
    s.cv.wait_until(lock, until, [&s] { return s.mail.load(); });
    s.mail.store(false);
  }
  s.waiting.store(false);
}

// ----------------------------------------------------------------- inlet

inlet_core::inlet_core(actor_system& sys, std::string name, std::size_t senders, channel_config cfg,
                       std::chrono::milliseconds open_timeout)
    : sys_{sys},
      name_{std::move(name)},
      expected_{senders},
      cfg_{cfg},
      open_deadline_{std::chrono::steady_clock::now() + open_timeout},
      box_{sys} {
  register_channel_messages();
}

inlet_core::~inlet_core() {
  if (!box_.ended()) box_.end(failure_.empty() ? error{} : error{errc::runtime_error, failure_});
}

inlet_core::sender_rec* inlet_core::find_sender(std::uint64_t id) {
  for (auto& [k, rec] : senders_)
    if (k == id) return &rec;
  return nullptr;
}

bool inlet_core::all_gone() const noexcept {
  for (auto& [id, rec] : senders_)
    if (!rec.gone) return false;
  return true;
}

void inlet_core::drain() {
  box_.drain([this](troupe::detail::message_node& n) { handle(n); });
}

void inlet_core::handle(troupe::detail::message_node& n) {
  using troupe::detail::values_of;
  if (take_data(n)) return;
  if (n.holds<chan_open_atom, std::uint64_t, std::uint32_t, actor>()) {
    auto& [a, id, dest, credit_to] = values_of<chan_open_atom, std::uint64_t, std::uint32_t, actor>(n);
    on_open(id, dest, credit_to);
  } else if (n.holds<chan_end_atom, std::uint64_t, std::uint64_t>()) {
    auto& [a, id, total] = values_of<chan_end_atom, std::uint64_t, std::uint64_t>(n);
    on_end(id, total);
  } else if (n.holds<down_msg>()) {
    on_down(std::get<0>(values_of<down_msg>(n)));
  } else if (n.holds<exit_msg>()) {
    fail("inlet '" + name_ + "': ended by a peer: " + reason_of(std::get<0>(values_of<exit_msg>(n)).reason));
  } else if (n.holds<troupe::detail::kill_msg>()) {
    fail("inlet '" + name_ + "': killed: " + reason_of(std::get<0>(values_of<troupe::detail::kill_msg>(n)).reason));
  } else {
    troupe::detail::count_dead_letter(sys_);
  }
}

void inlet_core::on_open(std::uint64_t id, std::uint32_t dest, const actor& credit_to) {
  if (find_sender(id) != nullptr || opened_ == expected_) {
    fail("inlet '" + name_ + "': unexpected " + sender_name(id) + " (a sender opened twice, or more senders than the " +
         std::to_string(expected_) + " expected)");
    return;
  }
  sender_rec rec;
  rec.credit_to = credit_to;
  rec.dest = dest;
  rec.granted = cfg_.window;
  senders_.emplace_back(id, std::move(rec));
  ++opened_;
  if (credit_to) credit_to->add_monitor(box_.handle());
  sys_.send(credit_to, chan_credit_atom{}, dest, static_cast<std::uint64_t>(cfg_.window), std::uint64_t{0});
}

bool inlet_core::on_data(std::uint64_t id, std::size_t n) {
  auto* rec = find_sender(id);
  if (rec == nullptr || rec->ended) {
    fail("inlet '" + name_ + "': a batch from " + sender_name(id) +
         (rec ? ", which had ended" : ", which never opened"));
    return false;
  }
  if (rec->received + n > rec->granted) {
    fail("inlet '" + name_ + "': " + sender_name(id) + " sent beyond its credit");
    return false;
  }
  rec->received += n;
  queued_ += n;
  peak_ = std::max(peak_, queued_);
  return true;
}

void inlet_core::on_end(std::uint64_t id, std::uint64_t total) {
  auto* rec = find_sender(id);
  if (rec == nullptr || rec->ended) {
    fail("inlet '" + name_ + "': an end marker from " + sender_name(id) +
         (rec ? ", which had ended" : ", which never opened"));
  } else if (rec->received != total) {
    fail("inlet '" + name_ + "': " + sender_name(id) + " sent " + std::to_string(total) + " elements, " +
         std::to_string(rec->received) + " arrived");
  } else {
    rec->ended = true;
    ++ended_;
    if (rec->consumed != 0) grant(*rec);  // it waits for its last acknowledgement
  }
}

void inlet_core::on_down(const down_msg& d) {
  for (auto& [id, rec] : senders_) {
    if (rec.credit_to != d.source) continue;
    // A sender's credit actor ends normally only once it has every
    // acknowledgement, after its end marker; the marker may still be on
    // its way (a down message can overtake it): it is expected then.
    if (rec.ended || !d.reason) rec.gone = true;
    else
      fail("inlet '" + name_ + "': lost " + sender_name(id) + " after " + std::to_string(rec.received) +
           " elements: " + reason_of(d.reason));
  }
}

void inlet_core::fail(const std::string& why) {
  if (failure_.empty()) failure_ = why;
}

bool inlet_core::wait_ready(std::chrono::steady_clock::time_point until) {
  for (;;) {
    drain();
    if (!failure_.empty()) throw channel_error(failure_);
    if (has_batch()) return true;
    grant_all();  // dry: everything taken is acknowledged before waiting
    if (all_ended()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (opened_ < expected_ && now >= open_deadline_) {
      fail("inlet '" + name_ + "': " + std::to_string(opened_) + " of " + std::to_string(expected_) +
           " senders connected within the connect timeout");
      continue;
    }
    if (now >= until) return false;
    box_.wait(opened_ < expected_ ? std::min(until, open_deadline_) : until);
  }
}

void inlet_core::consumed(std::uint64_t sender, std::size_t n) {
  queued_ -= std::min(queued_, n);
  auto* rec = find_sender(sender);
  if (rec == nullptr) return;
  rec->consumed += n;
  // Grants go back a quarter window at a time, and whenever the inlet runs
  // dry (wait_ready, close): a grant per batch cost a message each way and
  // a wake-up of both nodes' I/O threads and the sender, per batch. A sender
  // that has ended waits for its last acknowledgement: it gets each at once
  // (other senders may keep the inlet from running dry).
  if (rec->ended || rec->consumed >= std::max(cfg_.batch, cfg_.window / 4)) grant(*rec);
}

void inlet_core::grant(sender_rec& rec) {
  const std::uint64_t n = rec.consumed;
  rec.consumed = 0;
  rec.granted += n;
  sys_.send(rec.credit_to, chan_credit_atom{}, rec.dest, n, rec.granted - cfg_.window);
}

void inlet_core::grant_all() {
  for (auto& [id, rec] : senders_)
    if (rec.consumed != 0) grant(rec);
}

void inlet_core::close(std::chrono::milliseconds linger) {
  // A sender's last grant could still be on its way; its process must not
  // see this one's end first (it would call its data lost).
  const auto until = std::chrono::steady_clock::now() + linger;
  grant_all();
  for (;;) {
    drain();
    if (!failure_.empty() || all_gone() || std::chrono::steady_clock::now() >= until) break;
    box_.wait(until);
  }
  box_.end(error{});
}

void inlet_core::abort(const error& why) {
  fail("inlet '" + name_ + "': aborted: " + why.to_string());
  box_.end(why ? why : error{errc::runtime_error, "channel aborted"});
}

// ---------------------------------------------------------------- outlet

outlet_core::outlet_core(cluster& cl, std::string name, channel_config cfg)
    : cl_{cl}, name_{std::move(name)}, cfg_{cfg} {
  register_channel_messages();
}

outlet_core::~outlet_core() {
  // Gone without its end of stream (a cancelled graph): the receivers fail.
  if (box_ && !box_->ended())
    box_->end(error{errc::runtime_error, "channel '" + name_ + "': a sender ended before its end of stream"});
}

void outlet_core::open(std::uint64_t id, const std::vector<std::size_t>& ranks, const std::vector<std::string>& names) {
  id_ = id;
  dests_.assign(ranks.size(), dest{});
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    dests_[i].inlet = cl_.find(ranks[i], names[i]);
    dests_[i].where = "inlet '" + names[i] + "' at " + cl_.describe(ranks[i]);
  }
  box_ = std::make_unique<owned_mailbox>(cl_.system());
  for (std::size_t i = 0; i < dests_.size(); ++i) {
    dests_[i].inlet->add_monitor(box_->handle());
    cl_.system().send(dests_[i].inlet, chan_open_atom{}, id_, static_cast<std::uint32_t>(i), box_->handle());
  }
}

void outlet_core::receive() {
  using troupe::detail::values_of;
  box_->drain([this](troupe::detail::message_node& n) {
    if (n.holds<chan_credit_atom, std::uint32_t, std::uint64_t, std::uint64_t>()) {
      auto& [a, i, k, acked] = values_of<chan_credit_atom, std::uint32_t, std::uint64_t, std::uint64_t>(n);
      if (i >= dests_.size()) return;
      dests_[i].credit += static_cast<std::int64_t>(k);
      dests_[i].acked = std::max(dests_[i].acked, acked);
    } else if (n.holds<down_msg>()) {
      const auto& d = std::get<0>(values_of<down_msg>(n));
      for (auto& dst : dests_) {
        if (dst.inlet != d.source) continue;
        dst.closed = true;
        if (d.reason && failure_.empty())
          failure_ = "lost " + dst.where + " after " + std::to_string(dst.acked) +
                     " acknowledged elements: " + d.reason.to_string();
      }
    } else if (n.holds<exit_msg>() && failure_.empty()) {
      failure_ = "ended by a peer: " + std::get<0>(values_of<exit_msg>(n)).reason.to_string();
    }
  });
  if (!failure_.empty()) fail_now();
}

void outlet_core::fail_now() const { throw channel_error("channel '" + name_ + "': " + failure_); }

std::uint64_t outlet_core::acknowledged() const {
  std::uint64_t n = 0;
  for (auto& d : dests_) n += d.acked;
  return n;
}

void outlet_core::check_cancelled() const {
  if (cancelled_ != nullptr && cancelled_->load(std::memory_order_relaxed))
    throw channel_error("channel '" + name_ + "': cancelled");
}

void outlet_core::take_credit(std::size_t i, std::size_t n) {
  for (;;) {
    receive();
    if (dests_[i].closed)
      throw channel_error("channel '" + name_ + "': " + dests_[i].where + " ended before the stream did");
    if (dests_[i].credit >= static_cast<std::int64_t>(n)) {
      dests_[i].credit -= static_cast<std::int64_t>(n);
      return;
    }
    check_cancelled();
    box_->wait(std::chrono::steady_clock::now() + std::chrono::milliseconds{50});
  }
}

void outlet_core::finish_all() {
  for (auto& d : dests_) cl_.system().send(d.inlet, chan_end_atom{}, id_, d.sent);
  // A receiver ends once every sender has ended; its last grant may reach us
  // just after its end: give it a moment before calling the data lost.
  std::optional<std::chrono::steady_clock::time_point> grace;
  for (;;) {
    receive();
    bool all = true, closed_short = false;
    for (auto& d : dests_) {
      if (d.acked < d.sent) {
        all = false;
        closed_short = closed_short || d.closed;
      }
    }
    if (all) break;
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds{50};
    if (closed_short) {
      const auto now = std::chrono::steady_clock::now();
      if (!grace) grace = now + std::chrono::seconds{1};
      if (now >= *grace) {
        std::string lost;
        for (auto& d : dests_) {
          if (d.acked >= d.sent) continue;
          if (!lost.empty()) lost += "; ";
          lost += d.where;
          lost += " acknowledged " + std::to_string(d.acked) + " of " + std::to_string(d.sent);
        }
        throw channel_error("channel '" + name_ + "': receivers ended early: " + lost);
      }
      until = std::min(until, *grace);
    }
    check_cancelled();
    box_->wait(until);
  }
  box_->end(error{});  // everything acknowledged: the inlets see this sender gone
}

void outlet_core::abort(const error& why) {
  const error e = why ? why : error{errc::runtime_error, "channel '" + name_ + "' aborted"};
  if (failure_.empty()) failure_ = "aborted: " + e.to_string();
  for (auto& d : dests_)
    if (d.inlet) cl_.system().send_exit(d.inlet, e);
  if (box_) box_->end(e);
}

}  // namespace detail

// --------------------------------------------------------------- cluster

struct cluster::directory {
  std::mutex mtx;
  std::condition_variable cv;
  std::map<std::string, actor> inlets;
};

cluster::cluster(actor_system& sys, node& n, cluster_config cfg)
    : sys_{&sys}, node_{&n}, cfg_{std::move(cfg)}, dir_{std::make_unique<directory>()} {
  if (cfg_.peers.empty()) throw net_error("troupe::net::cluster: no peers (one address per rank)");
  if (cfg_.rank >= cfg_.peers.size())
    throw net_error("troupe::net::cluster: rank " + std::to_string(cfg_.rank) + " is not below the " +
                    std::to_string(cfg_.peers.size()) + " peers");
  if (cfg_.peers.size() > 1) cfg_.peers[cfg_.rank].endpoint = n.listen(cfg_.peers[cfg_.rank].endpoint);
}

cluster::~cluster() = default;

std::string cluster::describe(std::size_t r) const {
  std::string s = "rank " + std::to_string(r);
  if (r < cfg_.peers.size()) s += " (" + cfg_.peers[r].endpoint + ")";
  return s;
}

void cluster::set_peer(std::size_t r, remote_address where) {
  if (r >= cfg_.peers.size() || r == cfg_.rank)
    throw net_error("troupe::net::cluster::set_peer: rank " + std::to_string(r) + " is not a peer");
  std::lock_guard<std::mutex> lock{dir_->mtx};
  cfg_.peers[r] = std::move(where);
}

void cluster::publish(const actor& inlet, const std::string& name) {
  {
    std::lock_guard<std::mutex> lock{dir_->mtx};
    dir_->inlets[name] = inlet;
  }
  dir_->cv.notify_all();
  if (cfg_.peers.size() > 1) node_->publish(inlet, name);
}

actor cluster::find(std::size_t r, const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + cfg_.connect_timeout;
  if (r == cfg_.rank) {
    std::unique_lock<std::mutex> lock{dir_->mtx};
    for (;;) {
      if (auto it = dir_->inlets.find(name); it != dir_->inlets.end()) return it->second;
      if (dir_->cv.wait_until(lock, deadline) == std::cv_status::timeout)
        throw net_error("troupe::net: no inlet '" + name + "' in this process (" + describe(r) + ") within " +
                        std::to_string(cfg_.connect_timeout.count()) + " ms");
    }
  }
  if (r >= cfg_.peers.size())
    throw net_error("troupe::net: rank " + std::to_string(r) + " is not in the cluster (" +
                    std::to_string(cfg_.peers.size()) + " ranks)");
  std::string last;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      std::string what = "troupe::net: no inlet '" + name + "' at " + describe(r);
      what += " within " + std::to_string(cfg_.connect_timeout.count()) + " ms (";
      what += last;
      what += ')';
      throw net_error(what);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    try {
      return node_->remote_actor(cfg_.peers[r], name, std::min(left, std::chrono::milliseconds{2000}));
    } catch (const net_error& e) {
      last = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
}

}  // namespace troupe::net
