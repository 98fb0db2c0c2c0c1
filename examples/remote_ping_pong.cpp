// remote_ping_pong: two nodes, CURVE keys, a published actor and a proxy.
// Without arguments both nodes run in this process (over loopback TCP, as
// two processes would). Split over two processes (or machines):
//   troupe-keygen keys/server && troupe-keygen keys/client
//   remote_ping_pong serve tcp://127.0.0.1:7000 keys/server.key keys/client.pub
//   remote_ping_pong ping  tcp://127.0.0.1:7000 keys/client.key keys/server.pub
#include <troupe/net.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>

using namespace std::chrono_literals;
namespace net = troupe::net;

struct ping {
  int n;
  auto fields() { return std::tie(n); }  // how it crosses: field by field
};
struct pong {
  int n;
  auto fields() { return std::tie(n); }
};

// Both sides name the types that cross, the same way.
void register_types() {
  net::add_type<ping>("ping");
  net::add_type<pong>("pong");
  net::add_message<ping>();
  net::add_message<pong>();
}

// [net_1]
std::string serve(troupe::actor_system& sys, net::node& node, const std::string& endpoint) {
  auto ponger = sys.spawn([](troupe::actor_ctx&) { return troupe::behavior{[](ping p) { return pong{p.n}; }}; });
  std::string bound = node.listen(endpoint);  // "tcp://127.0.0.1:*" picks a free port
  node.publish(ponger, "ponger");
  return bound;
}
// [/net_1]

// [net_2]
int ping_pong(troupe::actor_system& sys, net::node& node, const net::remote_address& where, int rounds) {
  troupe::actor ponger = node.remote_actor(where, "ponger", 5s);  // a proxy: used like a local handle
  troupe::scoped_actor self{sys};
  int answered = 0;
  for (int i = 0; i < rounds; ++i)
    self->request(ponger, 5s, ping{i})
        .receive([&](pong p) { answered += p.n == i; },
                 [](troupe::error& e) { std::printf("%s\n", e.to_string().c_str()); });
  return answered;
}
// [/net_2]

int main(int argc, char** argv) {
  register_types();
  if (argc == 5 && (std::strcmp(argv[1], "serve") == 0 || std::strcmp(argv[1], "ping") == 0)) {
    // [net_3]
    net::node_config cfg{.keys = net::load_key_pair(argv[3]), .trusted_keys = {net::load_public_key(argv[4])}};
    // [/net_3]
    troupe::actor_system sys;
    net::node node{sys, cfg};
    if (std::strcmp(argv[1], "serve") == 0) {
      std::printf("listening at %s\n", serve(sys, node, argv[2]).c_str());
      std::this_thread::sleep_for(std::chrono::hours{24});
      return 0;
    }
    int ok = ping_pong(sys, node, {argv[2], net::load_public_key(argv[4])}, 1000);
    std::printf("%d of 1000 round trips answered\n", ok);
    return ok == 1000 ? 0 : 1;
  }
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s [serve|ping ENDPOINT KEYFILE PEER_PUBFILE]\n", argv[0]);
    return 2;
  }
  // One process, two nodes, each trusting the other's key.
  auto server_keys = net::generate_key_pair();
  auto client_keys = net::generate_key_pair();
  troupe::actor_system server_sys, client_sys;
  net::node server{server_sys, {.keys = server_keys, .trusted_keys = {client_keys.public_key}, .name = "server"}};
  net::node client{client_sys, {.keys = client_keys, .trusted_keys = {server_keys.public_key}, .name = "client"}};
  const std::string endpoint = serve(server_sys, server, "tcp://127.0.0.1:*");
  int ok = ping_pong(client_sys, client, {endpoint, server_keys.public_key}, 1000);
  std::printf("%d of 1000 round trips answered\n", ok);
  return ok == 1000 ? 0 : 1;
}
