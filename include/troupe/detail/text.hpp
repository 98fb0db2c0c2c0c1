// layer: util
// text.hpp: user input shown inside error messages, escaped and bounded.
//   quoted("a\"b")                 -> "a\"b" with the quote escaped
//   quoted_excerpt(10 kB string, 5000) -> at most ~70 characters around
//                                     position 5000, "..." where cut, and
//                                     the input's length
// Printable ASCII stays as is, '"' and '\' are escaped, every other byte
// (NUL included, so a message is never cut short) becomes \xNN.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace troupe::detail {

inline void append_escaped(std::string& out, std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    }
  }
}

/// `s` in double quotes, escaped.
inline std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  append_escaped(out, s);
  out += '"';
  return out;
}

/// At most `width` bytes of `s` around `position` (the start when
/// position >= s.size() is not given), in quotes and escaped; a cut input is
/// marked with "..." and followed by its length.
inline std::string quoted_excerpt(std::string_view s, std::size_t position = 0, std::size_t width = 64) {
  if (s.size() <= width) return quoted(s);
  const std::size_t pos = position > s.size() ? s.size() : position;
  std::size_t first = pos > width / 2 ? pos - width / 2 : 0;
  if (first + width > s.size()) first = s.size() - width;
  std::string out{"\""};
  if (first > 0) out += "...";
  append_escaped(out, s.substr(first, width));
  if (first + width < s.size()) out += "...";
  out += "\" (" + std::to_string(s.size()) + " bytes)";
  return out;
}

}  // namespace troupe::detail
