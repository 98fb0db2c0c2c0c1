// net_wire_fuzz.hpp: the frame decoder of troupe::net under test without a
// node (src/net/wire.hpp): the seed corpus, the mutations, and the checks
// that every input must pass. Used by the libFuzzer target (TROUPE_FUZZ,
// tests/fuzz/net_wire_fuzz.cpp) and by troupe_net_tests (net_test.cpp:
// net_wire.*), which runs the corpus and a few thousand mutations in every
// configuration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "net/wire.hpp"

namespace troupe_fuzz {

/// Registers the message types whose values check_frame decodes (i64,
/// string, vector<i64>, the runtime's own, and the user types of
/// value_corpus); idempotent.
void register_wire_types();

/// What a peer sends to open a session and talk to the actor published as
/// "sink" (id `sink`) on the node of incarnation `dst`: a hello (frame 0), a
/// lookup of "sink" (frame 1), two data records holding `a` and `b` (frame 2).
/// The layout of tests/net_process_test.cpp's corpus.
std::vector<std::string> session_frames(std::uint64_t src, std::uint64_t dst, std::uint64_t sink, std::int64_t a,
                                        std::int64_t b);

/// Seeds: the session frames, a frame of every record kind, a heartbeat,
/// values of every registered type, and a frame of many records.
std::vector<std::string> wire_corpus();

/// Values of the harness's user message types (fields with bools, checked
/// enums, strings and arrays; packed and raw structs; cereal containers):
/// (message type hash, the values' bytes).
std::vector<std::pair<std::uint64_t, std::string>> value_corpus();

/// Reads `data` as the values of each user message type of the harness and
/// checks: no exception but decode_error; what is accepted is written back,
/// and that reads and writes again to the same bytes. Returns "" or what broke.
std::string check_values(const std::uint8_t* data, std::size_t size);

/// Writes the seed corpus (wire_corpus, and value_corpus's values) into
/// `dir`, one file each, when it is an empty directory.
void write_seeds(const std::string& dir);

inline constexpr unsigned mutation_kinds = 9;
/// A mutation of `frame` of kind `kind % mutation_kinds` (truncation, bit
/// flips, a huge length, random bytes after the header, garbage appended, a
/// byte inserted, a byte removed, a record length rewritten, two frames
/// spliced), drawn from `rng`.
std::string mutate(std::string frame, unsigned kind, std::mt19937_64& rng, const std::vector<std::string>& corpus);

/// Decodes `data` and checks what must hold for any input: no crash, no
/// exception other than decode_error inside the decoder; a bad header is
/// one malformed and nothing else; an error for each malformed; a frame
/// accepted whole is written back byte for byte; what was accepted is
/// written and read again unchanged, without error; the values of the
/// registered types decode or throw decode_error. Returns "" or what broke.
std::string check_frame(const std::uint8_t* data, std::size_t size, troupe::net::wire::decoded_frame* out = nullptr);

/// Where the records of a well-formed frame end (the offsets at which a
/// truncation leaves a well-formed frame), the header's end first.
std::vector<std::size_t> record_ends(const std::string& frame);

}  // namespace troupe_fuzz
