// wire.hpp: troupe::net's wire format, as pure functions (no sockets, no
// actors, no node state): what a frame and its records hold, how they are
// written and how they are read. The node (node_core.hpp) builds its frames
// and reads the peers' frames with these functions only, so the decoder can be
// tested and fuzzed alone (tests/fuzz/net_wire_fuzz.cpp).
//
// Every ZeroMQ message is one frame: a 32-byte header
//   u32 magic "TRP1", u8 version, u8 flags (0), u16 reserved (0),
//   u64 source incarnation, u64 destination incarnation (0 in a first frame),
//   u64 sequence number (per connection and direction, from 0)
// followed by records, each a u32 length and a body whose first byte is its
// kind (rec). Records are batched per connection up to
// node_config::batch_bytes, so small messages share frames; a frame of the
// header alone is a heartbeat. Actor references are (incarnation of the node
// that runs the actor, its id there); id 0 is no actor. Integers are written
// in the host's byte order (both nodes are the same build, codec.hpp).
//
// Reading checks every length against the bytes there (reader, codec.hpp);
// whatever does not have the expected shape throws decode_error, never more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "troupe/net/codec.hpp"

namespace troupe::net::wire {

inline constexpr std::uint32_t frame_magic = 0x31505254;  // "TRP1"
inline constexpr std::uint8_t version = 2;
inline constexpr std::size_t header_bytes = 32;

/// What a record is (its body's first byte); the fields after it:
enum class rec : std::uint8_t {
  hello = 1,     // u32 version, string name, u32 n, n x u64 type hashes, u32 m, m x string endpoint, u8 flags
  welcome,       // the same, answering a hello
  lookup,        // u64 token, string name, u64 interface hash
  lookup_reply,  // u64 token, u8 status, actor ref, string detail
  data,          // u8 flags, u32 tag, u64 dest, actor ref sender, u64 id, u64 type hash, values
  monitor,       // u64 id: tell me when it ends
  down,          // u64 id, error
  release,       // u64 id, u64 count
  bye,           // the peer closes its node
  types,         // u32 n, n x u64 type hashes: registered since the handshake
  pause,         // u64 id: hold back data for this local actor of the sender's (over its soft limit)
  resume,        // u64 id: send to it again
};
inline constexpr std::uint8_t max_rec = static_cast<std::uint8_t>(rec::resume);
/// data flags: deliver with priority::urgent (the runtime's own messages).
inline constexpr std::uint8_t flag_urgent = 1;
/// lookup_reply status.
enum : std::uint8_t { lookup_ok = 0, lookup_unknown = 1, lookup_mismatch = 2 };

struct frame_header {
  std::uint64_t src = 0;  ///< the sender's incarnation
  std::uint64_t dst = 0;  ///< the receiver's incarnation (0: not known yet)
  std::uint64_t seq = 0;  ///< per connection and direction, from 0
  std::uint8_t flags = 0;
  std::uint16_t reserved = 0;
};

/// An actor as it travels: the incarnation of the node that runs it, and
/// its id there (0: no actor).
struct actor_ref {
  std::uint64_t origin = 0;
  std::uint64_t id = 0;
};

/// handshake flags: a welcome that refuses the connection it answers,
/// because the answering node keeps the one it opened to the asker (one
/// connection per pair of nodes: session.cpp, on_handshake).
inline constexpr std::uint8_t handshake_duplicate = 1;

struct handshake {  // hello, welcome
  std::string name{};
  std::vector<std::uint64_t> types{};
  std::vector<std::string> endpoints{};  ///< where the sender listens (its bound endpoints)
  std::uint8_t flags = 0;
};
struct lookup {
  std::uint64_t token = 0;
  std::string name{};
  std::uint64_t iface = 0;  ///< hash of a typed interface; 0: any
};
struct lookup_reply {
  std::uint64_t token = 0;
  std::uint8_t status = lookup_ok;
  actor_ref a{};
  std::string detail{};
};
/// A data record up to its values (which the message type's codec reads).
struct data_head {
  std::uint8_t flags = 0;
  std::uint32_t tag = 0;
  std::uint64_t dest = 0;  ///< id of the receiver on the reading node
  actor_ref sender{};
  std::uint64_t id = 0;    ///< correlation word (ext/messages.hpp)
  std::uint64_t hash = 0;  ///< the message type's name hash
};
struct down {
  std::uint64_t id = 0;
  error reason{};
};
struct release {
  std::uint64_t id = 0;
  std::uint64_t count = 0;
};

// ------------------------------------------------------------ writing
/// Appends a frame header to `out`.
void put_header(std::string& out, const frame_header& h);
/// Opens a record at the end of `out` (room for its length); returns where
/// it starts, for close_record.
inline std::size_t open_record(std::string& out) {
  const std::size_t at = out.size();
  out.append(4, '\0');
  return at;
}
/// Writes the length of the record opened at `at` (its body is what follows).
inline void close_record(std::string& out, std::size_t at) noexcept {
  auto len = static_cast<std::uint32_t>(out.size() - at - 4);
  std::memcpy(out.data() + at, &len, sizeof len);
}

// Record bodies, kind byte first.
void put_actor(writer& w, const actor_ref& a);
void put_handshake(writer& w, rec kind, const handshake& h);
void put_types(writer& w, const std::vector<std::uint64_t>& types);
void put_lookup(writer& w, const lookup& l);
void put_lookup_reply(writer& w, const lookup_reply& l);
/// The data record's head; the values follow (message_type::encode).
void put_data_head(writer& w, const data_head& d);
void put_monitor(writer& w, std::uint64_t id);
/// pause or resume (kind), for the actor `id`.
void put_flow(writer& w, rec kind, std::uint64_t id);
void put_down(writer& w, const down& d);
void put_release(writer& w, const release& r);
void put_bye(writer& w);

// ------------------------------------------------------------ reading
// Each throws decode_error on a body of another shape; the record readers
// take the body after its kind byte and check that nothing is left over
// (read_data_head leaves the values).

/// Checks the magic and the version.
frame_header read_header(reader& r);
/// The next record of a frame into `body` (the same handle context as
/// `frame`); false at the end of the frame. Throws decode_error when the
/// rest of the frame cannot be delimited.
bool next_record(reader& frame, reader& body);
/// The kind byte (decode_error for an unknown kind).
rec read_kind(reader& r);
actor_ref read_actor(reader& r);
handshake read_handshake(reader& r);
std::vector<std::uint64_t> read_types(reader& r);
lookup read_lookup(reader& r);
lookup_reply read_lookup_reply(reader& r);
data_head read_data_head(reader& r);
std::uint64_t read_monitor(reader& r);
std::uint64_t read_flow(reader& r);
down read_down(reader& r);
release read_release(reader& r);
void read_bye(reader& r);

// ------------------------------------------------------------ whole frames
// For tests and fuzzing: a frame decoded without acting on it, and written
// back. A frame decode_frame accepts is written back by encode_frame byte
// for byte (the format has no slack).

struct data_record {
  data_head head{};
  std::string values{};  ///< the values' bytes (read by the message type's codec)
};
struct record {
  rec kind = rec::bye;
  /// bye: monostate; hello and welcome: handshake; types: vector; monitor, pause, resume: u64
  std::variant<std::monostate, handshake, std::vector<std::uint64_t>, lookup, lookup_reply, data_record, std::uint64_t,
               down, release>
      body;
};
struct frame {
  frame_header header;
  std::vector<record> records;  ///< those that decoded, in order
};
struct decoded_frame {
  bool header_ok = false;
  frame f;
  /// What a node counts as malformed in this frame, for the shape alone: a
  /// bad header (1, and nothing else is read), each record that does not
  /// decode, and a rest that cannot be delimited (1, and reading stops).
  std::size_t malformed = 0;
  std::vector<std::string> errors;  ///< one per malformed
};
decoded_frame decode_frame(const char* data, std::size_t size);
std::string encode_frame(const frame& f);

}  // namespace troupe::net::wire
