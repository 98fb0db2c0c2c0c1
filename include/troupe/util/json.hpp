// json.hpp: the one JSON writer of the library (a graph's metrics, the
// metrics exporter's API): objects and arrays nested by calls, commas and
// escaping done here, numbers in their shortest exact form.
//   troupe::json_writer w;
//   w.object([&] {
//     w.field("name", "wc").field("rate", 1.5e6);
//     w.array("nodes", [&] { for (auto& n : nodes) w.object([&] { w.field("replica", n.replica); }); });
//   });
//   std::string text = w.str();   // {"name":"wc","rate":1500000,"nodes":[{"replica":0}]}
// Strings are written as they are but for '"', '\' and control characters
// (escaped); bytes above 0x7f pass through (UTF-8 stays UTF-8). A double
// that is not finite is written as null.
// Cost: appends to one std::string.
#pragma once

#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace troupe {

class json_writer {
 public:
  /// {...}, with `body` writing its fields; as a value, or as field `key`.
  template <class F>
  json_writer& object(F&& body) {
    open('{');
    body();
    return close('}');
  }
  template <class F>
  json_writer& object(std::string_view key, F&& body) {
    name(key);
    return object(body);
  }
  /// [...], with `body` writing its values; as a value, or as field `key`.
  template <class F>
  json_writer& array(F&& body) {
    open('[');
    body();
    return close(']');
  }
  template <class F>
  json_writer& array(std::string_view key, F&& body) {
    name(key);
    return array(body);
  }

  /// "key": value, inside an object.
  template <class T>
  json_writer& field(std::string_view key, const T& v) {
    name(key);
    return value(v);
  }

  json_writer& value(std::string_view s) {
    comma();
    out_ += '"';
    escape(s);
    out_ += '"';
    return *this;
  }
  json_writer& value(const char* s) { return value(std::string_view{s}); }
  json_writer& value(const std::string& s) { return value(std::string_view{s}); }
  json_writer& value(bool b) {
    comma();
    out_ += b ? "true" : "false";
    return *this;
  }
  template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>)
  json_writer& value(T v) {
    comma();
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(v)) {
        out_ += "null";
        return *this;
      }
    }
    char buf[40];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, ec == std::errc{} ? end : buf);
    return *this;
  }
  /// Text that is JSON already (another writer's str()), as a value.
  json_writer& raw(std::string_view json) {
    comma();
    out_ += json;
    return *this;
  }

  const std::string& str() const noexcept { return out_; }
  std::string take() noexcept { return std::move(out_); }

 private:
  void comma() {
    if (after_name_) {
      after_name_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void name(std::string_view key) {
    comma();
    out_ += '"';
    escape(key);
    out_ += "\":";
    after_name_ = true;
  }
  void open(char c) {
    comma();
    out_ += c;
    first_.push_back(true);
  }
  json_writer& close(char c) {
    out_ += c;
    first_.pop_back();
    return *this;
  }
  void escape(std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    for (char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += ch;
      } else if (c < 0x20) {
        out_ += "\\u00";
        out_ += hex[c >> 4];
        out_ += hex[c & 15];
      } else {
        out_ += ch;
      }
    }
  }

  std::string out_;
  std::vector<bool> first_;  // per open object or array: nothing written in it yet
  bool after_name_ = false;  // a key was written: its value needs no comma
};

}  // namespace troupe
