// The safe wire of troupe::net (docs/net.md, "Wire safety"): structs cross
// field by field (no padding), raw bytes only by opt-in and named by their
// layout, bool and declared enum values are checked, every length is bounded
// by the bytes there before anything is allocated, and a node in untrusted
// mode refuses exits, kills and actors it did not hand out.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "net/wire.hpp"
#include "troupe/net/node.hpp"

using namespace std::chrono_literals;
using troupe::actor;
using troupe::errc;
using troupe::error;
namespace net = troupe::net;
namespace wire = troupe::net::wire;

namespace safety {

struct padded {  // 1 byte, 7 of padding, 8 bytes
  std::uint8_t kind = 0;
  std::uint64_t value = 0;
  auto fields() { return std::tie(kind, value); }
};
struct flagged {
  std::int32_t id = 0;
  bool on = false;
  auto fields() { return std::tie(id, on); }
};
struct outer {  // a bad field inside a field: the error names the path
  std::string label;
  flagged inner;
  auto fields() { return std::tie(label, inner); }
};
enum class color : std::uint8_t { red, green, blue };
enum class parity : std::int16_t { unknown = 0, even = 2, odd = 3 };  // a set, not a range
struct packed3 {  // no padding: copied whole, the same bytes as field by field
  std::int64_t key = 0, value = 0, stamp = 0;
  auto fields() { return std::tie(key, value, stamp); }
};
struct swapped {  // no padding, but fields() lists them out of memory order
  std::int64_t a = 0, b = 0;
  auto fields() { return std::tie(b, a); }
};
struct reading {  // fields of fixed sizes only, nested: one bounds check, every check kept
  color hue = color::red;
  flagged tag;
  bool bits[3] = {};
  double value = 0;
  auto fields() { return std::tie(hue, tag, bits, value); }
};
struct sample_raw {
  std::int32_t x = 0;
  std::int32_t y = 0;
};
struct toggle {  // through cereal, with a bool
  bool on = false;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(on);
  }
};
struct bag {  // through cereal
  std::string name;
  std::vector<std::int64_t> values;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, values);
  }
};

}  // namespace safety

// Two definitions of "the same" raw type, as two builds would have them.
namespace build_a {
struct sample {
  std::int32_t x = 0;
};
}  // namespace build_a
namespace build_b {
struct sample {
  std::int64_t x = 0;
};
}  // namespace build_b

template <>
struct troupe::net::enum_values<safety::color> {
  static constexpr safety::color first = safety::color::red, last = safety::color::blue;
};
template <>
struct troupe::net::enum_values<safety::parity> {
  static constexpr bool valid(safety::parity p) {
    return p == safety::parity::even || p == safety::parity::odd || p == safety::parity::unknown;
  }
};
template <>
struct troupe::net::raw_bytes<safety::sample_raw> {
  static constexpr std::uint32_t version = 1;
};
template <>
struct troupe::net::raw_bytes<build_a::sample> {
  static constexpr std::uint32_t version = 1;
};
template <>
struct troupe::net::raw_bytes<build_b::sample> {
  static constexpr std::uint32_t version = 1;
};

namespace {

using namespace safety;

void register_types() {
  static const bool once = [] {
    net::add_type<padded>("safety.padded");
    net::add_type<flagged>("safety.flagged");
    net::add_type<outer>("safety.outer");
    net::add_type<reading>("safety.reading");
    net::add_type<color>("safety.color");
    net::add_type<parity>("safety.parity");
    net::add_type<packed3>("safety.packed3");
    net::add_type<swapped>("safety.swapped");
    net::add_type<sample_raw>("safety.sample_raw");
    net::add_type<bag>("safety.bag");
    net::add_type<toggle>("safety.toggle");
    net::add_type<build_a::sample>("safety.sample");  // one name, two layouts
    net::add_type<build_b::sample>("safety.sample");
    net::add_message<std::string>();
    net::add_message<std::int64_t>();
    return true;
  }();
  (void)once;
}

template <class T>
std::string bytes_of(const T& v) {
  std::string out;
  net::writer w{out, nullptr};
  net::codec<T>::write(w, v);
  return out;
}

template <class T>
T read_all(const std::string& buf) {
  net::reader r{buf.data(), buf.data() + buf.size(), nullptr};
  T v{};
  net::codec<T>::read(r, v);
  EXPECT_EQ(r.left(), 0U);
  return v;
}

/// The decode_error's message of reading a T from `buf` ("" when none).
template <class T>
std::string refusal(const std::string& buf) {
  net::reader r{buf.data(), buf.data() + buf.size(), nullptr};
  T v{};
  try {
    net::codec<T>::read(r, v);
  } catch (const net::decode_error& e) {
    return e.what();
  }
  return {};
}

template <class T>
void put(std::string& buf, T v) {
  buf.append(reinterpret_cast<const char*>(&v), sizeof v);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

}  // namespace

// ---------------------------------------------------------------- structs

TEST(net_wire_safety, a_struct_crosses_field_by_field_without_its_padding) {
  register_types();
  // The struct's memory, padding included, holds 0xEE before its fields are set.
  alignas(padded) unsigned char storage[sizeof(padded)];
  std::memset(storage, 0xEE, sizeof storage);
  auto* p = ::new (storage) padded;
  p->kind = 1;
  p->value = 2;
  const std::string out = bytes_of(*p);
  std::string expected;
  put(expected, std::uint8_t{1});
  put(expected, std::uint64_t{2});
  EXPECT_EQ(out, expected);  // 9 bytes: no padding, no 0xEE
  EXPECT_EQ(out.find('\xEE'), std::string::npos);
  const auto back = read_all<padded>(out);
  EXPECT_EQ(back.kind, 1);
  EXPECT_EQ(back.value, 2U);
  EXPECT_EQ(net::codec<padded>::name(), "safety.padded{u8,u64}");
}

TEST(net_wire_safety, a_struct_without_padding_is_copied_whole_in_the_same_form) {
  register_types();
  const packed3 v{1, -2, 3};
  std::string by_field;
  put(by_field, std::int64_t{1});
  put(by_field, std::int64_t{-2});
  put(by_field, std::int64_t{3});
  EXPECT_EQ(bytes_of(v), by_field);
  const std::vector<packed3> many{{1, 2, 3}, {4, 5, 6}};
  const auto back = read_all<std::vector<packed3>>(bytes_of(many));
  ASSERT_EQ(back.size(), 2U);
  EXPECT_EQ(back[1].value, 5);
  // Out of memory order: still the order fields() gives.
  std::string ba;
  put(ba, std::int64_t{20});
  put(ba, std::int64_t{10});
  EXPECT_EQ(bytes_of(swapped{10, 20}), ba);
  EXPECT_EQ(read_all<std::vector<swapped>>(bytes_of(std::vector<swapped>{{10, 20}}))[0].a, 10);
}

TEST(net_wire_safety, arrays_cross_element_by_element) {
  register_types();
  const std::array<char, 4> text{'a', 'b', 'c', 'd'};
  EXPECT_EQ(bytes_of(text), "abcd");
  EXPECT_EQ((net::codec<std::array<char, 4>>::name()), "char[4]");
  const std::array<flagged, 2> two{flagged{1, true}, flagged{2, false}};
  const auto back = read_all<std::array<flagged, 2>>(bytes_of(two));
  EXPECT_TRUE(back[0].on);
  EXPECT_EQ(back[1].id, 2);
}

// ---------------------------------------------------------------- raw opt-in

TEST(net_wire_safety, an_opted_in_raw_type_is_named_by_its_layout) {
  register_types();
  EXPECT_EQ(net::codec<sample_raw>::name(), "safety.sample_raw@raw8a4v1");
  // One name, two layouts (two builds): two message types, never confused.
  const auto a = net::codec<build_a::sample>::name();
  const auto b = net::codec<build_b::sample>::name();
  EXPECT_NE(a, b);
  EXPECT_EQ(a, "safety.sample@raw4a4v1");
  EXPECT_EQ(b, "safety.sample@raw8a8v1");
  net::add_message<build_a::sample>();
  net::add_message<build_b::sample>();  // no clash: the names differ
  EXPECT_NE(net::detail::find_message(net::detail::name_hash(a)), nullptr);
  EXPECT_NE(net::detail::find_message(net::detail::name_hash(b)), nullptr);
  const std::vector<sample_raw> v{{1, 2}, {3, 4}};
  EXPECT_EQ(bytes_of(v).size(), 4 + 2 * sizeof(sample_raw));  // one copy of the elements
  EXPECT_EQ(read_all<std::vector<sample_raw>>(bytes_of(v))[1].y, 4);
}

// ---------------------------------------------------------------- checked values

TEST(net_wire_safety, a_bool_byte_other_than_0_or_1_is_refused_naming_the_type) {
  register_types();
  std::string buf;
  put(buf, std::uint8_t{2});
  EXPECT_NE(refusal<bool>(buf).find("bool holds 2"), std::string::npos) << refusal<bool>(buf);
  std::string f = bytes_of(flagged{7, true});
  f.back() = 2;
  const auto why = refusal<flagged>(f);
  EXPECT_NE(why.find("safety.flagged"), std::string::npos) << why;
  EXPECT_NE(why.find("bool holds 2"), std::string::npos) << why;
  std::string o = bytes_of(outer{"x", {7, false}});
  o.back() = 9;
  EXPECT_NE(refusal<outer>(o).find("safety.outer{string,safety.flagged{i32,bool}}: safety.flagged"), std::string::npos)
      << refusal<outer>(o);
  f.back() = 1;
  EXPECT_TRUE(read_all<flagged>(f).on);
  // Inside a cereal type too.
  std::string t = bytes_of(toggle{true});
  ASSERT_EQ(t.size(), 1U);
  EXPECT_TRUE(read_all<toggle>(t).on);
  t[0] = 2;
  EXPECT_NE(refusal<toggle>(t).find("safety.toggle: bool holds 2"), std::string::npos) << refusal<toggle>(t);
}

TEST(net_wire_safety, a_struct_of_fixed_size_fields_is_read_with_every_check) {
  register_types();
  const reading in{color::blue, {-5, true}, {true, false, true}, 2.5};
  const std::string buf = bytes_of(in);
  ASSERT_EQ(buf.size(), 1 + (4 + 1) + 3 + 8U);  // the fields, no padding
  const auto back = read_all<reading>(buf);
  EXPECT_EQ(back.hue, color::blue);
  EXPECT_EQ(back.tag.id, -5);
  EXPECT_TRUE(back.tag.on);
  EXPECT_TRUE(back.bits[0] && !back.bits[1] && back.bits[2]);
  EXPECT_EQ(back.value, 2.5);
  const auto refused = [&](std::size_t at, char byte) {
    std::string bad = buf;
    bad[at] = byte;
    return refusal<reading>(bad);
  };
  EXPECT_NE(refused(0, 9).find("safety.color holds 9"), std::string::npos) << refused(0, 9);
  EXPECT_NE(refused(5, 2).find("}: safety.flagged{i32,bool}: bool holds 2"), std::string::npos) << refused(5, 2);
  EXPECT_NE(refused(7, 3).find("bool holds 3"), std::string::npos) << refused(7, 3);
  const auto cut = refusal<reading>(buf.substr(0, buf.size() - 1));
  EXPECT_NE(cut.find("safety.reading{"), std::string::npos) << cut;
  EXPECT_NE(cut.find("needs 17 bytes"), std::string::npos) << cut;
  // In a vector, each element the same way.
  const auto many = read_all<std::vector<reading>>(bytes_of(std::vector<reading>{in, in}));
  ASSERT_EQ(many.size(), 2U);
  EXPECT_EQ(many[1].tag.id, -5);
}

TEST(net_wire_safety, an_enum_out_of_its_declared_values_is_refused) {
  register_types();
  EXPECT_EQ(read_all<color>(bytes_of(color::blue)), color::blue);
  std::string buf;
  put(buf, std::uint8_t{7});
  const auto why = refusal<color>(buf);
  EXPECT_NE(why.find("safety.color holds 7"), std::string::npos) << why;
  // A test instead of a range; a vector of checked enums is read one by one.
  EXPECT_EQ(read_all<parity>(bytes_of(parity::unknown)), parity::unknown);
  std::string p;
  put(p, std::int16_t{4});
  EXPECT_NE(refusal<parity>(p).find("safety.parity holds 4"), std::string::npos) << refusal<parity>(p);
  std::string v = bytes_of(std::vector<color>{color::red, color::green});
  v.back() = 3;
  EXPECT_NE(refusal<std::vector<color>>(v).find("holds 3"), std::string::npos);
}

// ---------------------------------------------------------------- lengths

TEST(net_wire_safety, huge_lengths_are_refused_before_allocating) {
  register_types();
  std::string s;
  put(s, std::uint32_t{0xffffffff});
  s += "abc";
  EXPECT_NE(refusal<std::string>(s).find("exceeds the 3 bytes left"), std::string::npos) << refusal<std::string>(s);
  EXPECT_FALSE(refusal<std::vector<std::int64_t>>(s).empty());
  EXPECT_FALSE(refusal<std::vector<padded>>(s).empty());
  EXPECT_FALSE(refusal<std::vector<std::string>>(s).empty());
  // cereal writes 64-bit lengths: 8 EB, 1 TB, and one element more than there is.
  for (const std::uint64_t n : {std::uint64_t{1} << 63, std::uint64_t{1} << 40, std::uint64_t{3}}) {
    std::string inner = bytes_of(bag{"ok", {1, 2}});
    // name: u64 length 2, "ok"; values: u64 length, then 8 bytes each
    std::memcpy(inner.data() + 8 + 2, &n, sizeof n);
    const auto why = refusal<bag>(inner);
    std::string name = bytes_of(bag{"ok", {}});
    std::memcpy(name.data(), &n, sizeof n);
    if (n > 16) {  // more elements than bytes: refused before cereal allocates
      EXPECT_NE(why.find("safety.bag: cereal length " + std::to_string(n) + " exceeds"), std::string::npos)
          << n << ": " << why;
      EXPECT_NE(refusal<bag>(name).find("cereal length"), std::string::npos) << refusal<bag>(name);
    } else {  // a length that fits what is left: read, and found short
      EXPECT_NE(why.find("safety.bag: cereal value truncated"), std::string::npos) << why;
      EXPECT_FALSE(refusal<bag>(name).empty());
    }
  }
  // An empty vector read in one copy (its data() may be null: the fuzzer's first finding).
  EXPECT_TRUE(read_all<std::vector<std::int64_t>>(bytes_of(std::vector<std::int64_t>{})).empty());
  EXPECT_TRUE(read_all<std::vector<packed3>>(bytes_of(std::vector<packed3>{})).empty());
  const auto back = read_all<bag>(bytes_of(bag{"ok", {1, 2}}));
  EXPECT_EQ(back.values, (std::vector<std::int64_t>{1, 2}));
}

// ---------------------------------------------------------------- untrusted mode

namespace {

constexpr auto relaxed_timeout = std::chrono::milliseconds{5000};

struct log_lines {
  std::mutex m;
  std::vector<std::string> lines;
  std::size_t count(const std::string& part) {
    std::lock_guard<std::mutex> g{m};
    std::size_t n = 0;
    for (auto& l : lines) n += l.find(part) != std::string::npos;
    return n;
  }
};

net::node_config plain(const char* name, bool untrusted, const std::shared_ptr<log_lines>& logs = nullptr) {
  net::node_config c;
  c.security = net::security::plaintext;
  c.heartbeat_timeout = relaxed_timeout;
  c.name = name;
  if (logs)
    c.log = [logs](const std::string& l) {
      std::lock_guard<std::mutex> g{logs->m};
      logs->lines.push_back(l);
    };
  c.untrusted_peers = untrusted;
  return c;
}

/// A server node (untrusted mode or not) that publishes "victim", an actor
/// answering strings with themselves; a client node that looked it up.
struct exit_fixture {
  explicit exit_fixture(bool untrusted)
      : server{server_sys, plain("server", untrusted, logs)}, client{client_sys, plain("client", false)} {
    register_types();
    victim =
        server_sys.spawn([](troupe::actor_ctx&) { return troupe::behavior{[](const std::string& s) { return s; }}; });
    server.publish(victim, "victim");
    endpoint = server.listen("tcp://127.0.0.1:*");
    remote = client.remote_actor({endpoint, ""}, "victim", 5s);
  }
  /// Whether the victim still answers (through the network).
  bool answers() {
    troupe::scoped_actor self{client_sys};
    std::string got;
    self->request(remote, 5s, std::string{"ping"}).receive([&](const std::string& s) { got = s; }, [](error&) {});
    return got == "ping";
  }
  /// Whether the victim ended within `limit` (seen by a local monitor).
  bool ended_within(std::chrono::milliseconds limit) {
    troupe::scoped_actor self{server_sys};
    self->monitor(victim);
    bool down = false;
    self->receive_for(limit, [&](troupe::down_msg&) { down = true; });
    return down;
  }
  std::shared_ptr<log_lines> logs = std::make_shared<log_lines>();
  troupe::actor_system server_sys{troupe::config{.workers = 2}};
  troupe::actor_system client_sys{troupe::config{.workers = 2}};
  net::node server;
  net::node client;
  std::string endpoint;
  actor victim;
  actor remote;
};

}  // namespace

TEST(net_untrusted, exit_and_kill_from_an_untrusted_peer_are_refused) {
  exit_fixture f{true};
  ASSERT_TRUE(f.answers());
  f.client_sys.send_exit(f.remote, error{errc::user_shutdown, "from the peer"});
  f.client_sys.send_exit(f.remote, error{errc::user_shutdown, "again"});
  f.client_sys.send_exit(f.remote, error{errc::kill, "killed by the peer"});  // a kill_msg
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (f.server.stats().refused_signals < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(f.server.stats().refused_signals, 3U);
  EXPECT_FALSE(f.ended_within(200ms));
  EXPECT_TRUE(f.answers());                                            // alive, and the peer still reaches it
  EXPECT_EQ(f.logs->count("refused a message of type exit_msg"), 1U);  // logged once per peer
  EXPECT_EQ(f.logs->count("refused"), 1U);
}

TEST(net_untrusted, a_trusted_setup_still_ends_an_actor_by_exit_or_kill) {
  {
    exit_fixture f{false};
    ASSERT_TRUE(f.answers());
    f.client_sys.send_exit(f.remote, error{errc::user_shutdown, "from the peer"});
    EXPECT_TRUE(f.ended_within(10s));
    EXPECT_EQ(f.server.stats().refused_signals, 0U);
  }
  {
    exit_fixture f{false};
    ASSERT_TRUE(f.answers());
    f.client_sys.send_exit(f.remote, error{errc::kill, "killed by the peer"});  // a kill_msg
    EXPECT_TRUE(f.ended_within(10s));
  }
}

TEST(net_untrusted, a_peer_reaches_only_the_actors_it_was_handed) {
  register_types();
  exit_fixture f{true};
  ASSERT_TRUE(f.answers());
  std::atomic<int> got{0};
  auto counter =
      f.server_sys.spawn([&got](troupe::actor_ctx&) { return troupe::behavior{[&got](std::int64_t) { ++got; }}; });
  f.server.publish(counter, "counter");
  auto handed = f.client.remote_actor({f.endpoint, ""}, "counter", 5s);  // exported to the client only
  // Another peer names it anyway: a forged reference (this node's
  // incarnation and the actor's id), a message and a monitor.
  const std::uint64_t src = 0x5eed, dst = f.server.incarnation();
  std::string values;
  net::writer vw{values, nullptr};
  net::codec<std::int64_t>::write(vw, 42);
  auto frame = [&](std::uint64_t seq, std::vector<wire::record> records) {
    return wire::encode_frame(wire::frame{{.src = src, .dst = seq == 0 ? 0 : dst, .seq = seq}, std::move(records)});
  };
  const auto before = f.server.stats();
  net::detail::feed_frames_for_test(
      f.server, "forger",
      {frame(0, {{wire::rec::hello,
                  wire::handshake{"forger", net::detail::registered_hashes(0, net::detail::registered_count())}}}),
       frame(1, {{wire::rec::data,
                  wire::data_record{{.dest = counter.id(), .hash = net::detail::name_hash("i64")}, values}},
                 {wire::rec::monitor, std::uint64_t{counter.id()}}})});
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (f.server.stats().refused_actors < before.refused_actors + 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(f.server.stats().refused_actors, before.refused_actors + 2);
  EXPECT_EQ(f.logs->count("refused a message for local actor"), 1U);  // the first refusal of that peer
  // The peer it was handed to reaches it.
  troupe::scoped_actor self{f.client_sys};
  self->send(handed, std::int64_t{1});
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (got.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(got.load(), 1);  // its message, and not the forger's
}
