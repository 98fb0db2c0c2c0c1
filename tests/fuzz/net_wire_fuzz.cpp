// net_wire_fuzz.cpp: a libFuzzer harness for troupe::net's frame decoder
// (src/net/wire.hpp), and the corpus and mutations that troupe_net_tests
// runs through the same checks without the fuzzer (net_test.cpp, net_wire.*).
//   cmake -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DTROUPE_FUZZ=ON ...
//   ninja -C build-fuzz troupe_net_wire_fuzz
//   mkdir corpus && TROUPE_FUZZ_SEEDS=corpus ./build-fuzz/tests/troupe_net_wire_fuzz -max_total_time=60 corpus
// (scripts/test --only fuzz does this for a bounded run).
// The decoder is pure (no node, no sockets, no actor system): every input is
// decoded, written back and decoded again, and the values of the registered
// message types are read by their codecs; any crash, sanitizer report or
// broken invariant (check_frame) is a finding.
#include "net_wire_fuzz.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <unordered_set>

#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

// User types of every kind the codec reads (codec.hpp), for the values the
// fuzzer decodes: fields with bools, checked enums, strings and arrays;
// packed and raw structs; cereal containers; vectors of each.
namespace troupe_fuzz::values {
enum class kind : std::uint8_t { a, b, c };
struct item {
  std::uint16_t id = 0;
  bool flag = false;
  kind k = kind::a;
  std::string label;
  std::array<char, 3> code{};
  auto fields() { return std::tie(id, flag, k, label, code); }
};
struct packed {
  std::int64_t a = 0, b = 0;
  auto fields() { return std::tie(a, b); }
};
struct raw {
  std::int32_t x = 0;
  float y = 0;
};
struct bag {
  std::string name;
  std::vector<std::int64_t> numbers;
  std::vector<std::string> tags;
  std::map<std::string, std::int32_t> counts;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, numbers, tags, counts);
  }
};
struct nested {
  item head;
  std::vector<item> items;
  std::vector<packed> rows;
  std::vector<raw> raws;
  std::vector<bool> bits;
  std::vector<kind> kinds;
  bag extra;
  auto fields() { return std::tie(head, items, rows, raws, bits, kinds, extra); }
};
}  // namespace troupe_fuzz::values

template <>
struct troupe::net::enum_values<troupe_fuzz::values::kind> {
  static constexpr auto first = troupe_fuzz::values::kind::a, last = troupe_fuzz::values::kind::c;
};
template <>
struct troupe::net::raw_bytes<troupe_fuzz::values::raw> {
  static constexpr std::uint32_t version = 1;
};

namespace troupe_fuzz {

namespace net = troupe::net;
namespace wire = troupe::net::wire;

namespace {

/// Actor references without actors: read as the wire has them (no actor),
/// written as "no actor".
class no_actors final : public net::detail::handle_context {
 public:
  void write_actor(net::writer& w, const troupe::actor& /*a*/) override { wire::put_actor(w, {}); }
  troupe::actor read_actor(net::reader& r) override {
    (void)wire::read_actor(r);
    return {};
  }
};

std::unordered_set<std::uint64_t>& harness_hashes() {
  static std::unordered_set<std::uint64_t> h;
  return h;
}

std::string frame_of(const wire::frame_header& h, const std::vector<wire::record>& records) {
  return wire::encode_frame(wire::frame{h, records});
}

wire::record data(wire::data_head head, const std::string& values) {
  return wire::record{wire::rec::data, wire::data_record{head, values}};
}

template <class... Ts>
std::string values_of(const Ts&... vs) {
  std::string out;
  no_actors ctx;
  net::writer w{out, &ctx};
  (net::codec<Ts>::write(w, vs), ...);
  return out;
}

std::string hex_prefix(const std::string& s) {
  std::string out;
  char buf[4];
  for (std::size_t i = 0; i < s.size() && i < 48; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(s[i]));
    out += buf;
  }
  if (s.size() > 48) out += "...";
  return out;
}

}  // namespace

namespace {
/// The hashes of the user message types whose values check_values reads.
std::vector<std::uint64_t>& value_hashes() {
  static std::vector<std::uint64_t> h;
  return h;
}
}  // namespace

void register_wire_types() {
  static const bool once = [] {
    net::add_message<std::int64_t>();
    net::add_message<std::string>();
    net::add_message<std::vector<std::int64_t>>();
    net::add_message<std::string, troupe::actor>();
    for (const char* name :
         {"()", "error", "down_msg", "exit_msg", "kill_msg", "i64", "string", "vector<i64>", "string,actor"})
      harness_hashes().insert(net::detail::name_hash(name));
    net::add_type<values::kind>("fuzz.kind");
    net::add_type<values::item>("fuzz.item");
    net::add_type<values::packed>("fuzz.packed");
    net::add_type<values::raw>("fuzz.raw");
    net::add_type<values::bag>("fuzz.bag");
    net::add_type<values::nested>("fuzz.nested");
    net::add_message<values::nested>();
    net::add_message<values::bag, bool, values::kind>();
    net::add_message<std::vector<std::string>, std::vector<values::item>>();
    for (const auto* t :
         {net::detail::find_message(troupe::ext::type_id_of<values::nested>),
          net::detail::find_message(troupe::ext::type_id_of<values::bag, bool, values::kind>),
          net::detail::find_message(troupe::ext::type_id_of<std::vector<std::string>, std::vector<values::item>>)}) {
      value_hashes().push_back(t->hash);
      harness_hashes().insert(t->hash);
    }
    return true;
  }();
  (void)once;
}

std::vector<std::string> session_frames(std::uint64_t src, std::uint64_t dst, std::uint64_t sink, std::int64_t a,
                                        std::int64_t b) {
  register_wire_types();
  const auto i64 = net::detail::name_hash("i64");
  std::vector<std::string> frames;
  frames.push_back(frame_of({.src = src, .dst = 0, .seq = 0},
                            {{wire::rec::hello, wire::handshake{"fuzzer", net::detail::registered_hashes(
                                                                              0, net::detail::registered_count())}}}));
  frames.push_back(frame_of({.src = src, .dst = dst, .seq = 1},
                            {{wire::rec::lookup, wire::lookup{.token = 1, .name = "sink", .iface = 0}}}));
  frames.push_back(frame_of({.src = src, .dst = dst, .seq = 2}, {data({.dest = sink, .hash = i64}, values_of(a)),
                                                                 data({.dest = sink, .hash = i64}, values_of(b))}));
  return frames;
}

std::vector<std::string> wire_corpus() {
  register_wire_types();
  constexpr std::uint64_t src = 0x1000, dst = 0x2001, sink = 42;
  auto corpus = session_frames(src, dst, sink, 1, 2);
  const wire::frame_header h{.src = src, .dst = dst, .seq = 3};
  const wire::actor_ref someone{src, 9};
  corpus.push_back(
      frame_of({.src = dst, .dst = src, .seq = 0}, {{wire::rec::welcome, wire::handshake{"server", {1, 2, 3}}}}));
  corpus.push_back(frame_of(h, {{wire::rec::types, std::vector<std::uint64_t>{4, 5}}}));
  corpus.push_back(
      frame_of(h, {{wire::rec::lookup_reply, wire::lookup_reply{.token = 1, .a = {dst, sink}}},
                   {wire::rec::lookup_reply,
                    wire::lookup_reply{.token = 2, .status = wire::lookup_mismatch, .detail = "another interface"}}}));
  corpus.push_back(frame_of(h, {{wire::rec::monitor, std::uint64_t{sink}},
                                {wire::rec::down, wire::down{sink, troupe::error{troupe::errc::actor_exited, "gone"}}},
                                {wire::rec::release, wire::release{sink, 3}}}));
  corpus.push_back(frame_of(h, {{wire::rec::bye, std::monostate{}}}));
  corpus.push_back(frame_of(h, {}));  // a heartbeat
  corpus.push_back(frame_of(
      h, {data({.sender = someone, .id = 5, .hash = net::detail::name_hash("string")}, values_of(std::string{"hello"})),
          data({.dest = sink, .id = troupe::ext::response_bit | 5, .hash = net::detail::name_hash("vector<i64>")},
               values_of(std::vector<std::int64_t>{1, 2, 3})),
          data({.flags = wire::flag_urgent, .dest = sink, .hash = net::detail::name_hash("down_msg")},
               values_of(troupe::down_msg{{}, troupe::error{troupe::errc::runtime_error, "boom"}})),
          data({.dest = sink, .hash = net::detail::name_hash("string,actor")},
               [&] {
                 std::string v = values_of(std::string{"ref"});
                 net::writer w{v, nullptr};
                 wire::put_actor(w, someone);
                 return v;
               }()),
          data({.dest = sink, .hash = net::detail::name_hash("()")}, ""),
          data({.dest = sink, .hash = 0x0123456789abcdefULL}, "unknown type")}));
  for (const auto& v : value_corpus()) corpus.push_back(frame_of(h, {data({.dest = sink, .hash = v.first}, v.second)}));
  std::vector<wire::record> many;
  for (std::int64_t i = 0; i < 40; ++i)
    many.push_back(data({.tag = 1, .dest = sink, .hash = net::detail::name_hash("i64")}, values_of(i)));
  corpus.push_back(frame_of(h, many));
  return corpus;
}

std::vector<std::pair<std::uint64_t, std::string>> value_corpus() {
  register_wire_types();
  using namespace values;
  const item one{7, true, kind::b, "seven", {'a', 'b', 'c'}};
  const bag b{"bag", {1, -2, 3}, {"x", "yz"}, {{"k", 1}, {"l", 2}}};
  const nested n{one, {one, item{}}, {{1, 2}, {3, 4}}, {{5, 6.5F}}, {true, false, true}, {kind::c, kind::a}, b};
  const auto& hs = value_hashes();
  return {{hs[0], values_of(n)},
          {hs[0], values_of(nested{})},
          {hs[1], values_of(b, true, kind::c)},
          {hs[2], values_of(std::vector<std::string>{"", "a", std::string(40, 'z')}, std::vector<item>{one, one})}};
}

std::string check_values(const std::uint8_t* data, std::size_t size) {
  register_wire_types();
  no_actors ctx;
  const char* begin = reinterpret_cast<const char*>(data);
  for (auto hash : value_hashes()) {
    const auto* t = net::detail::find_message(hash);
    troupe::ext::mail m;
    try {
      net::reader r{begin, begin + size, &ctx};
      m = t->decode(r, troupe::actor{}, 0);
    } catch (const net::decode_error&) {
      continue;  // refused, as it may be
    } catch (const std::exception& e) {
      return "the values of " + t->name + " threw " + e.what() + " (not a decode_error)";
    }
    // What was read is written, read and written again the same.
    std::string once, twice;
    try {
      net::writer w1{once, &ctx};
      t->encode(w1, m);
      net::reader r{once.data(), once.data() + once.size(), &ctx};
      auto again = t->decode(r, troupe::actor{}, 0);
      net::writer w2{twice, &ctx};
      t->encode(w2, again);
    } catch (const std::exception& e) {
      return "accepted values of " + t->name + " do not read back: " + e.what();
    }
    // (Not always the input's bytes: a cereal map drops a repeated key.)
    if (once != twice) return "accepted values of " + t->name + " change when read back";
  }
  return {};
}

void write_seeds(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir) || !fs::is_empty(dir)) return;
  std::size_t i = 0;
  for (const auto& f : wire_corpus()) std::ofstream{fs::path{dir} / ("frame" + std::to_string(i++))} << f;
  for (const auto& v : value_corpus()) std::ofstream{fs::path{dir} / ("values" + std::to_string(i++))} << v.second;
}

std::vector<std::size_t> record_ends(const std::string& frame) {
  std::vector<std::size_t> ends;
  if (frame.size() < wire::header_bytes) return ends;
  std::size_t at = wire::header_bytes;
  ends.push_back(at);
  while (at + 4 <= frame.size()) {
    std::uint32_t len = 0;
    std::memcpy(&len, frame.data() + at, 4);
    if (len > frame.size() - at - 4) break;
    at += 4 + len;
    ends.push_back(at);
  }
  return ends;
}

std::string mutate(std::string frame, unsigned kind, std::mt19937_64& rng, const std::vector<std::string>& corpus) {
  if (frame.empty()) frame.push_back('\0');
  switch (kind % mutation_kinds) {
    case 0:  // truncated
      frame.resize(rng() % frame.size());
      break;
    case 1:  // bit flips
      for (int k = 0; k < 1 + static_cast<int>(rng() % 8); ++k)
        frame[rng() % frame.size()] ^= static_cast<char>(1 << (rng() % 8));
      break;
    case 2:  // a huge length somewhere
      if (frame.size() >= 4) std::memset(frame.data() + rng() % (frame.size() - 3), 0xff, 4);
      break;
    case 3:  // random bytes after the header
      for (std::size_t k = wire::header_bytes; k < frame.size(); ++k) frame[k] = static_cast<char>(rng());
      break;
    case 4:  // garbage appended
      for (int k = 0; k < 16; ++k) frame.push_back(static_cast<char>(rng()));
      break;
    case 5:  // a byte inserted
      frame.insert(frame.begin() + static_cast<std::ptrdiff_t>(rng() % (frame.size() + 1)), static_cast<char>(rng()));
      break;
    case 6:  // a byte removed
      frame.erase(frame.begin() + static_cast<std::ptrdiff_t>(rng() % frame.size()));
      break;
    case 7: {  // a record's length rewritten (small or any)
      auto ends = record_ends(frame);
      if (ends.size() < 2) break;
      const std::size_t at = ends[rng() % (ends.size() - 1)];
      const auto len = static_cast<std::uint32_t>(rng() % 2 == 0 ? rng() % 64 : rng());
      std::memcpy(frame.data() + at, &len, 4);
      break;
    }
    case 8: {  // the front of this frame, the back of another
      const auto& other = corpus[rng() % corpus.size()];
      frame.resize(rng() % (frame.size() + 1));
      frame.append(other, rng() % (other.size() + 1));
      break;
    }
  }
  return frame;
}

std::string check_frame(const std::uint8_t* data, std::size_t size, wire::decoded_frame* out) {
  register_wire_types();
  const std::string input(reinterpret_cast<const char*>(data), size);
  wire::decoded_frame d;
  try {
    d = wire::decode_frame(input.data(), input.size());
  } catch (const std::exception& e) {
    return std::string{"decode_frame threw "} + e.what() + " on " + hex_prefix(input);
  }
  if (d.errors.size() != d.malformed) return "not one error per malformed on " + hex_prefix(input);
  if (!d.header_ok) {
    if (d.malformed != 1 || !d.f.records.empty()) return "a bad header counted otherwise on " + hex_prefix(input);
    if (out != nullptr) *out = std::move(d);
    return {};
  }
  const std::string again = wire::encode_frame(d.f);
  if (d.malformed == 0 && again != input) return "an accepted frame is written back otherwise: " + hex_prefix(input);
  const auto d2 = wire::decode_frame(again.data(), again.size());
  if (!d2.header_ok || d2.malformed != 0 || d2.f.records.size() != d.f.records.size() ||
      wire::encode_frame(d2.f) != again)
    return "what was accepted does not read back unchanged: " + hex_prefix(input);
  no_actors ctx;
  for (const auto& rc : d.f.records) {
    if (rc.kind != wire::rec::data) continue;
    const auto& rd = std::get<wire::data_record>(rc.body);
    if (harness_hashes().count(rd.head.hash) == 0) continue;
    const auto* t = net::detail::find_message(rd.head.hash);
    if (t == nullptr) return "a harness type is not registered";
    net::reader r{rd.values.data(), rd.values.data() + rd.values.size(), &ctx};
    try {
      auto m = t->decode(r, troupe::actor{}, rd.head.id);
      if (!m) return "a decoder returned no message";
    } catch (const net::decode_error&) {  // NOLINT(bugprone-empty-catch): refused, as it must be
    } catch (const std::exception& e) {
      return "the values of " + t->name + " threw " + e.what() + " (not a decode_error)";
    }
  }
  if (out != nullptr) *out = std::move(d);
  return {};
}

}  // namespace troupe_fuzz

#ifdef TROUPE_LIBFUZZER
// TROUPE_FUZZ_SEEDS=DIR: an empty DIR gets the seed corpus (frames, and
// values of the user types) before the fuzzer reads it.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (const char* dir = std::getenv("TROUPE_FUZZ_SEEDS"); dir != nullptr && *dir != '\0') troupe_fuzz::write_seeds(dir);
  return 0;
}

// Every input is read as a frame and as the values of each user message type.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto broken = troupe_fuzz::check_frame(data, size);
  if (broken.empty()) broken = troupe_fuzz::check_values(data, size);
  if (!broken.empty()) {
    std::fprintf(stderr, "net_wire_fuzz: %s\n", broken.c_str());
    std::abort();
  }
  return 0;
}
#endif
