// layer: stream
// chain.hpp: consecutive nodes fused into one stage.
//   troupe::pipeline{source, troupe::chain{parse{}, stream::filter(valid), enrich{}}, sink}
//   troupe::farm{troupe::chain{decode{}, score{}}, 4}      // each replica runs both
// A chain is a node: each input goes through every node of the chain by
// direct calls, on one replica, with no channel between them; what one node
// emits is consumed by the next before send_next returns. Use it where the
// stages are cheap next to a channel hop (a few tens of instructions per
// element): they then cost a call instead of a ring push and pop, and they
// no longer run in parallel with each other (FastFlow's ff_comb, WindFlow's
// chained operators). Stage N's output type must be stage N+1's input type;
// the first node may be a source and the last a sink (a chain from a source
// to a sink is a whole graph, run on one replica; its source cannot pause:
// pause_until there fails the graph with std::logic_error).
//
// Inside the chain: on_start runs from the last node to the first (every
// node is ready before anything reaches it), on_stop from the first to the
// last (what a node sends from on_stop reaches the nodes after it before
// they stop), and so does on_idle; watermarks reach each node in order, after what the nodes
// before it emitted on hearing of them; send_next_if always sends and
// send_all reaches the next node once. Every node shares the chain's
// context (replica index, actor system). Metrics count the chain as one
// node. A chained node may not generate watermarks: wrap the chain instead
// (stream::with_watermarks(troupe::chain{...}, time)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "troupe/detail/runner.hpp"
#include "troupe/stream/node.hpp"

namespace troupe {

namespace detail {

/// What node i of a chain emits into: node i + 1, called directly.
template <class T, class Next>
class chain_link final : public emit_target<T> {
 public:
  void bind(Next* next) noexcept { next_ = next; }
  void send_routed(T&& v) override { next_->consume(v); }
  bool send_if(T& v, std::size_t /*limit*/) override {
    next_->consume(v);
    return true;
  }
  void send_all(T&& v) override { next_->consume(v); }
  void watermark(std::uint64_t /*w*/) override {}  // unreachable: chained nodes do not generate watermarks

 private:
  Next* next_ = nullptr;
};

template <class N>
concept chainable_node = requires {
  typename N::node_tag;
  typename N::in_type;
  typename N::out_type;
};

template <class... Ns>
struct chain_rules {
  using nodes = std::tuple<Ns...>;
  static constexpr std::size_t size = sizeof...(Ns);
  static constexpr bool all_nodes = (chainable_node<Ns> && ...);
  template <std::size_t I>
  static constexpr bool linked() {
    if constexpr (!all_nodes) return true;  // reported above
    else
      return std::is_same_v<typename std::tuple_element_t<I, nodes>::out_type,
                            typename std::tuple_element_t<I + 1, nodes>::in_type>;
  }
  template <std::size_t... I>
  static constexpr bool all_linked(std::index_sequence<I...>) {
    return (linked<I>() && ...);
  }
  static constexpr bool types_fit = all_linked(std::make_index_sequence<size - 1>{});
  template <class N>
  static constexpr bool generates = requires { requires N::emits_watermarks; };
  static constexpr bool no_generator = !(generates<Ns> || ...);
  template <class N>
  static constexpr bool own_thread = requires { requires N::needs_own_thread; };
  template <std::size_t... I>
  static constexpr bool ends_outside(std::index_sequence<I...>) {
    if constexpr (!all_nodes) return true;
    else
      return (!std::is_void_v<typename std::tuple_element_t<I, nodes>::out_type> && ...) &&
             (!std::is_void_v<typename std::tuple_element_t<I + 1, nodes>::in_type> && ...);
  }
  /// Only the first node may be a source, only the last a sink.
  static constexpr bool ends_fit = ends_outside(std::make_index_sequence<size - 1>{});
};

}  // namespace detail

template <class... Ns>
class chain : public stream::node<typename std::tuple_element_t<0, std::tuple<Ns...>>::in_type,
                                  typename std::tuple_element_t<sizeof...(Ns) - 1, std::tuple<Ns...>>::out_type> {
  static_assert(sizeof...(Ns) > 0, "troupe::chain: a chain needs at least one node");
  using rules = detail::chain_rules<Ns...>;
  static_assert(rules::all_nodes,
                "troupe::chain: every stage must be a stream node (pipelines, farms and branches cannot be chained)");
  static_assert(rules::types_fit, "troupe::chain: a node's output type must be the next node's input type");
  static_assert(rules::ends_fit, "troupe::chain: only the first node may be a source, and only the last a sink");
  static_assert(rules::no_generator,
                "troupe::chain: a chained node may not generate watermarks; wrap the chain in "
                "stream::with_watermarks instead");

  using nodes_type = std::tuple<Ns...>;
  static constexpr std::size_t count = sizeof...(Ns);
  template <std::size_t I>
  using node_t = std::tuple_element_t<I, nodes_type>;
  using first_type = node_t<0>;
  using last_type = node_t<count - 1>;
  using base = stream::node<typename first_type::in_type, typename last_type::out_type>;
  static constexpr bool is_source = std::is_void_v<typename first_type::in_type>;
  static constexpr bool is_sink = std::is_void_v<typename last_type::out_type>;
  template <std::size_t... I>
  static auto links_of(std::index_sequence<I...>)
      -> std::tuple<detail::chain_link<typename node_t<I>::out_type, node_t<I + 1>>...>;
  using links_type = decltype(links_of(std::make_index_sequence<count - 1>{}));

 public:
  static constexpr const char* kind = "chain";
  /// A chain with a node that needs a thread of its own gets one.
  static constexpr bool needs_own_thread = (rules::template own_thread<Ns> || ...);

  explicit chain(Ns... nodes) : nodes_{std::move(nodes)...} { link(); }
  chain(const chain& other) : base{other}, nodes_{other.nodes_} { link(); }
  chain& operator=(const chain&) = delete;
  ~chain() = default;

  void on_start() {
    const stream::node_context ctx{&this->system(), this->replica_index(), this->replica_count(), this->event_time()};
    for_each([&](auto& n) { detail::node_access::set_context(n, ctx); });
    if constexpr (!is_sink) detail::node_access::set_target(last(), detail::node_access::target(*this));
    start_from<count - 1>();
  }
  void on_idle() {
    for_each([](auto& n) { n.on_idle(); });
  }
  void on_stop() {
    for_each([](auto& n) { n.on_stop(); });
  }
  void on_watermark(std::uint64_t w) {
    for_each([w](auto& n) {
      detail::node_access::set_watermark(n, w);
      n.on_watermark(w);
    });
  }

  template <class In = typename first_type::in_type>
    requires(!std::is_void_v<In>)
  void consume(In& x) {
    std::get<0>(nodes_).consume(x);
  }

  bool produce()
    requires is_source
  {
    auto& first = std::get<0>(nodes_);
    const bool going = first.produce();
    using first_out = stream::emitter<typename first_type::out_type>;
    if (auto& at = detail::node_access::resume_at(static_cast<first_out&>(first)); at != 0) {
      if constexpr (!is_sink) this->pause_until(std::exchange(at, 0));
      else
        throw std::logic_error{
            "troupe::chain: a chain from a source to a sink cannot pause (pause_until); "
            "leave the sink out of the chain"};
    }
    return going;
  }

  /// The chained nodes, for inspection (node I of the prototype, or of a
  /// replica from inside its own callbacks).
  template <std::size_t I>
  node_t<I>& get() noexcept {
    return std::get<I>(nodes_);
  }

 private:
  last_type& last() noexcept { return std::get<count - 1>(nodes_); }

  template <class F>
  void for_each(F&& f) {
    std::apply([&](auto&... n) { (f(n), ...); }, nodes_);
  }

  template <std::size_t I>
  void start_from() {
    std::get<I>(nodes_).on_start();
    if constexpr (I > 0) start_from<I - 1>();
  }

  void link() { link_from(std::make_index_sequence<count - 1>{}); }
  template <std::size_t... I>
  void link_from(std::index_sequence<I...>) {
    ((std::get<I>(links_).bind(&std::get<I + 1>(nodes_)),
      detail::node_access::set_target(static_cast<stream::emitter<typename node_t<I>::out_type>&>(std::get<I>(nodes_)),
                                      &std::get<I>(links_))),
     ...);
  }

  nodes_type nodes_;
  links_type links_;
};

template <class... Ns>
chain(Ns...) -> chain<Ns...>;

}  // namespace troupe
