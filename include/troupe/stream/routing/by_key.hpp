// by_key.hpp: routing by key: every element with the same key goes to the
// same replica, so a replica may keep per-key state without locks.
//   troupe::farm{counter{}, 4, troupe::by_key{&word::text}}        // a member
//   troupe::farm{counter{}, 4, troupe::by_key{[](const word& w) -> const std::string& { return w.text; }}}
// The key function may return a reference: the key is hashed where it
// lies, never copied (return by value copies it once per element).
// The key's std::hash picks its key group (stream/key_group.hpp), and the
// group its replica: ranges of groups per replica, so that keyed state
// saved by groups can be spread over another number of replicas. The key
// type needs a std::hash specialisation.
// Cost: the key function (inlined), one hash and two multiplications per
// element.
#pragma once

#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>

#include "troupe/stream/key_group.hpp"

namespace troupe {

template <class KeyFn>
class by_key {
 public:
  explicit by_key(KeyFn key) : key_{std::move(key)} {}

  template <class T>
    requires std::is_invocable_v<const KeyFn&, const T&>
  std::size_t pick(const T& v, std::size_t n) const {
    using key_type = std::remove_cvref_t<std::invoke_result_t<const KeyFn&, const T&>>;
    return stream::replica_of_group(stream::key_group(std::hash<key_type>{}(std::invoke(key_, v))), n);
  }

 private:
  KeyFn key_;
};

template <class KeyFn>
by_key(KeyFn) -> by_key<KeyFn>;

}  // namespace troupe
