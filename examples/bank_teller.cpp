// bank_teller: one teller serialises transactions. While a transaction is
// open, deposits and withdrawals are skipped (kept, in order) and run once
// the teller is back to its idle behavior; the balance is the actor's state;
// a supervisor stops the teller from outside with a reason.
#include <troupe/troupe.hpp>

#include <iostream>
#include <string>
#include <vector>

using namespace std::chrono_literals;

struct open_atom {};
struct close_atom {};
struct balance_atom {};

// [teller]
struct account {
  long balance = 0;
  std::vector<std::string> journal;
};

troupe::behavior idle(troupe::stateful_actor<account>& self);

// During a transaction: amounts wait (troupe::skip) until close_atom.
troupe::behavior in_transaction(troupe::stateful_actor<account>& self) {
  return {[](long) { return troupe::skip; },
          [&self](close_atom) {
            self.state().journal.push_back("close");
            self.unbecome();  // back to idle: the skipped amounts run now, in order
          },
          [&self](balance_atom) { return self.state().balance; }};
}

troupe::behavior idle(troupe::stateful_actor<account>& self) {
  return {[&self](open_atom) {
            self.state().journal.push_back("open");
            self.become(troupe::keep_behavior, in_transaction(self));
          },
          [&self](long amount) {
            self.state().balance += amount;
            self.state().journal.push_back(std::to_string(amount));
          },
          [&self](balance_atom) { return self.state().balance; }};
}
// [/teller]

int main() {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto teller = sys.spawn([](troupe::stateful_actor<account>& self) { return idle(self); });
  troupe::scoped_actor self{sys};
  self->send(teller, open_atom{});
  self->send(teller, 100L);  // skipped while the transaction is open
  self->send(teller, -30L);
  long during = -1;
  self->request(teller, 10s, balance_atom{}).receive([&](long b) { during = b; }, [](troupe::error&) {});
  self->send(teller, close_atom{});
  long after = -1;
  self->request(teller, 10s, balance_atom{}).receive([&](long b) { after = b; }, [](troupe::error&) {});
  std::cout << "balance during the transaction " << during << ", after it " << after << '\n';

  // [stop]
  self->monitor(teller);
  sys.send_exit(teller, troupe::error{troupe::errc::user_shutdown, "branch closed"});
  troupe::error reason;
  self->receive([&](troupe::down_msg& m) { reason = m.reason; });
  std::cout << "teller ended: " << reason.to_string() << '\n';  // user_shutdown: branch closed
  // [/stop]
  return during == 0 && after == 70 && reason == troupe::errc::user_shutdown ? 0 : 1;
}
