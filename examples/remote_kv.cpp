// remote_kv: a key-value store actor with a typed interface, published by
// one node and used by another through request/response; a second client
// watches the store and learns when its node goes away.
#include <troupe/net.hpp>

#include <cstdio>
#include <map>
#include <string>

using namespace std::chrono_literals;
namespace net = troupe::net;

// [net_4]
struct put_atom {};
struct get_atom {};
// get answers (found, value).
using kv_store =
    troupe::typed_actor<void(put_atom, std::string, std::string), std::tuple<bool, std::string>(get_atom, std::string)>;

auto store = [](troupe::stateful_actor<std::map<std::string, std::string>>& self) -> kv_store::behavior_type {
  return {
      [&self](put_atom, const std::string& k, const std::string& v) { self.state()[k] = v; },
      [&self](get_atom, const std::string& k) {
        auto it = self.state().find(k);
        return it == self.state().end() ? std::tuple{false, std::string{}} : std::tuple{true, it->second};
      },
  };
};
// [/net_4]

int main() {
  net::add_type<put_atom>("kv.put");
  net::add_type<get_atom>("kv.get");
  auto server_keys = net::generate_key_pair();
  auto client_keys = net::generate_key_pair();
  troupe::actor_system server_sys, client_sys;
  net::node server{server_sys, {.keys = server_keys, .trusted_keys = {client_keys.public_key}, .name = "kv-server"}};
  net::node client{client_sys, {.keys = client_keys, .trusted_keys = {server_keys.public_key}, .name = "kv-client"}};
  const std::string endpoint = server.listen("tcp://127.0.0.1:*");
  // [net_5]
  server.publish(server_sys.spawn(store), "kv");  // registers the interface's messages too
  auto kv = client.remote_actor<kv_store>({endpoint, server_keys.public_key}, "kv", 5s);
  troupe::scoped_actor self{client_sys};
  self->send(kv, put_atom{}, std::string{"troupe"}, std::string{"actors + patterns"});
  std::string got;
  self->request(kv, 5s, get_atom{}, std::string{"troupe"})
      .receive([&](bool found, const std::string& v) { got = found ? v : "(missing)"; },
               [&](troupe::error& e) { got = e.to_string(); });
  // [/net_5]
  std::printf("troupe -> %s\n", got.c_str());
  // [net_6]
  self->monitor(kv);
  server.close();  // the store's node goes away
  troupe::error why;
  self->receive([&](troupe::down_msg& d) { why = d.reason; });
  std::printf("the store is gone: %s\n", why.to_string().c_str());
  // [/net_6]
  return got == "actors + patterns" && why == troupe::net::net_errc::remote_unreachable ? 0 : 1;
}
