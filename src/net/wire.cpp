// The wire format's pure functions (see wire.hpp).
#include "wire.hpp"

namespace troupe::net::wire {

// ------------------------------------------------------------ writing

void put_header(std::string& out, const frame_header& h) {
  writer w{out, nullptr};
  w.raw(frame_magic);
  w.raw(version);
  w.raw(h.flags);
  w.raw(h.reserved);
  w.raw(h.src);
  w.raw(h.dst);
  w.raw(h.seq);
}

void put_actor(writer& w, const actor_ref& a) {
  w.raw(a.origin);
  w.raw(a.id);
}

void put_handshake(writer& w, rec kind, const handshake& h) {
  w.raw(static_cast<std::uint8_t>(kind));
  w.raw(static_cast<std::uint32_t>(version));
  codec<std::string>::write(w, h.name);
  w.raw(static_cast<std::uint32_t>(h.types.size()));
  for (auto t : h.types) w.raw(t);
  w.raw(static_cast<std::uint32_t>(h.endpoints.size()));
  for (const auto& e : h.endpoints) codec<std::string>::write(w, e);
  w.raw(h.flags);
}

void put_types(writer& w, const std::vector<std::uint64_t>& types) {
  w.raw(static_cast<std::uint8_t>(rec::types));
  w.raw(static_cast<std::uint32_t>(types.size()));
  for (auto h : types) w.raw(h);
}

void put_lookup(writer& w, const lookup& l) {
  w.raw(static_cast<std::uint8_t>(rec::lookup));
  w.raw(l.token);
  codec<std::string>::write(w, l.name);
  w.raw(l.iface);
}

void put_lookup_reply(writer& w, const lookup_reply& l) {
  w.raw(static_cast<std::uint8_t>(rec::lookup_reply));
  w.raw(l.token);
  w.raw(l.status);
  put_actor(w, l.a);
  codec<std::string>::write(w, l.detail);
}

void put_data_head(writer& w, const data_head& d) {
  w.raw(static_cast<std::uint8_t>(rec::data));
  w.raw(d.flags);
  w.raw(d.tag);
  w.raw(d.dest);
  put_actor(w, d.sender);
  w.raw(d.id);
  w.raw(d.hash);
}

void put_monitor(writer& w, std::uint64_t id) {
  w.raw(static_cast<std::uint8_t>(rec::monitor));
  w.raw(id);
}

void put_flow(writer& w, rec kind, std::uint64_t id) {
  w.raw(static_cast<std::uint8_t>(kind));
  w.raw(id);
}

void put_down(writer& w, const down& d) {
  w.raw(static_cast<std::uint8_t>(rec::down));
  w.raw(d.id);
  codec<error>::write(w, d.reason);
}

void put_release(writer& w, const release& r) {
  w.raw(static_cast<std::uint8_t>(rec::release));
  w.raw(r.id);
  w.raw(r.count);
}

void put_bye(writer& w) { w.raw(static_cast<std::uint8_t>(rec::bye)); }

// ------------------------------------------------------------ reading

frame_header read_header(reader& r) {
  frame_header h;
  if (r.raw<std::uint32_t>("frame header") != frame_magic) throw decode_error("not a troupe frame (bad magic)");
  if (r.raw<std::uint8_t>("frame header") != version) throw decode_error("unknown wire version");
  h.flags = r.raw<std::uint8_t>("frame header");
  h.reserved = r.raw<std::uint16_t>("frame header");
  h.src = r.raw<std::uint64_t>("frame header");
  h.dst = r.raw<std::uint64_t>("frame header");
  h.seq = r.raw<std::uint64_t>("frame header");
  return h;
}

bool next_record(reader& frame, reader& body) {
  if (frame.left() == 0) return false;
  const std::size_t len = frame.raw<std::uint32_t>("record length");
  const char* p = frame.take(len, "record");
  body = reader{p, p + len, frame.context()};
  return true;
}

rec read_kind(reader& r) {
  const auto k = r.raw<std::uint8_t>("record kind");
  if (k == 0 || k > max_rec) throw decode_error("unknown record kind " + std::to_string(static_cast<int>(k)));
  return static_cast<rec>(k);
}

actor_ref read_actor(reader& r) {
  actor_ref a;
  a.origin = r.raw<std::uint64_t>("actor reference");
  a.id = r.raw<std::uint64_t>("actor reference");
  return a;
}

handshake read_handshake(reader& r) {
  if (r.raw<std::uint32_t>("handshake") != version) throw decode_error("handshake: other wire version");
  handshake h;
  codec<std::string>::read(r, h.name);
  auto n = r.count(8, "handshake types");
  h.types.reserve(n);
  for (std::size_t i = 0; i < n; ++i) h.types.push_back(r.raw<std::uint64_t>("handshake types"));
  const auto m = r.count(4, "handshake endpoints");
  h.endpoints.resize(m);
  for (auto& e : h.endpoints) codec<std::string>::read(r, e);
  h.flags = r.raw<std::uint8_t>("handshake flags");
  r.expect_end("handshake");
  return h;
}

std::vector<std::uint64_t> read_types(reader& r) {
  auto n = r.count(8, "types");
  std::vector<std::uint64_t> types;
  types.reserve(n);
  for (std::size_t i = 0; i < n; ++i) types.push_back(r.raw<std::uint64_t>("types"));
  r.expect_end("types");
  return types;
}

lookup read_lookup(reader& r) {
  lookup l;
  l.token = r.raw<std::uint64_t>("lookup");
  codec<std::string>::read(r, l.name);
  l.iface = r.raw<std::uint64_t>("lookup");
  r.expect_end("lookup");
  return l;
}

lookup_reply read_lookup_reply(reader& r) {
  lookup_reply l;
  l.token = r.raw<std::uint64_t>("lookup reply");
  l.status = r.raw<std::uint8_t>("lookup reply");
  l.a = read_actor(r);
  codec<std::string>::read(r, l.detail);
  r.expect_end("lookup reply");
  return l;
}

data_head read_data_head(reader& r) {
  data_head d;
  d.flags = r.raw<std::uint8_t>("data");
  d.tag = r.raw<std::uint32_t>("data");
  d.dest = r.raw<std::uint64_t>("data");
  d.sender = read_actor(r);
  d.id = r.raw<std::uint64_t>("data");
  d.hash = r.raw<std::uint64_t>("data");
  return d;
}

std::uint64_t read_monitor(reader& r) {
  auto id = r.raw<std::uint64_t>("monitor");
  r.expect_end("monitor");
  return id;
}

std::uint64_t read_flow(reader& r) {
  auto id = r.raw<std::uint64_t>("pause or resume");
  r.expect_end("pause or resume");
  return id;
}

down read_down(reader& r) {
  down d;
  d.id = r.raw<std::uint64_t>("down");
  codec<error>::read(r, d.reason);
  r.expect_end("down");
  return d;
}

release read_release(reader& r) {
  release x;
  x.id = r.raw<std::uint64_t>("release");
  x.count = r.raw<std::uint64_t>("release");
  r.expect_end("release");
  return x;
}

void read_bye(reader& r) { r.expect_end("bye"); }

// ------------------------------------------------------------ whole frames

namespace {

record read_record(reader& r) {
  record out;
  out.kind = read_kind(r);
  switch (out.kind) {
    case rec::hello:
    case rec::welcome:
      out.body = read_handshake(r);
      break;
    case rec::types:
      out.body = read_types(r);
      break;
    case rec::lookup:
      out.body = read_lookup(r);
      break;
    case rec::lookup_reply:
      out.body = read_lookup_reply(r);
      break;
    case rec::data: {
      data_record d;
      d.head = read_data_head(r);
      const std::size_t n = r.left();
      d.values.assign(r.take(n, "values"), n);
      out.body = std::move(d);
      break;
    }
    case rec::monitor:
      out.body = read_monitor(r);
      break;
    case rec::pause:
    case rec::resume:
      out.body = read_flow(r);
      break;
    case rec::down:
      out.body = read_down(r);
      break;
    case rec::release:
      out.body = read_release(r);
      break;
    case rec::bye:
      read_bye(r);
      break;
  }
  return out;
}

void write_record(std::string& out, const record& rc) {
  const std::size_t at = open_record(out);
  writer w{out, nullptr};
  switch (rc.kind) {
    case rec::hello:
    case rec::welcome: {
      const auto& h = std::get<handshake>(rc.body);
      put_handshake(w, rc.kind, h);
      break;
    }
    case rec::types:
      put_types(w, std::get<std::vector<std::uint64_t>>(rc.body));
      break;
    case rec::lookup:
      put_lookup(w, std::get<lookup>(rc.body));
      break;
    case rec::lookup_reply:
      put_lookup_reply(w, std::get<lookup_reply>(rc.body));
      break;
    case rec::data: {
      const auto& d = std::get<data_record>(rc.body);
      put_data_head(w, d.head);
      w.bytes(d.values.data(), d.values.size());
      break;
    }
    case rec::monitor:
      put_monitor(w, std::get<std::uint64_t>(rc.body));
      break;
    case rec::pause:
    case rec::resume:
      put_flow(w, rc.kind, std::get<std::uint64_t>(rc.body));
      break;
    case rec::down:
      put_down(w, std::get<down>(rc.body));
      break;
    case rec::release:
      put_release(w, std::get<release>(rc.body));
      break;
    case rec::bye:
      put_bye(w);
      break;
  }
  close_record(out, at);
}

}  // namespace

decoded_frame decode_frame(const char* data, std::size_t size) {
  decoded_frame d;
  reader r{data, data + size, nullptr};
  try {
    d.f.header = read_header(r);
  } catch (const decode_error& e) {
    d.malformed = 1;
    d.errors.emplace_back(e.what());
    return d;
  }
  d.header_ok = true;
  while (true) {
    reader body{nullptr, nullptr, nullptr};
    try {
      if (!next_record(r, body)) break;
    } catch (const decode_error& e) {
      ++d.malformed;
      d.errors.emplace_back(e.what());
      break;  // the rest of the frame cannot be delimited
    }
    try {
      d.f.records.push_back(read_record(body));
    } catch (const decode_error& e) {
      ++d.malformed;
      d.errors.emplace_back(e.what());
    }
  }
  return d;
}

std::string encode_frame(const frame& f) {
  std::string out;
  put_header(out, f.header);
  for (const auto& rc : f.records) write_record(out, rc);
  return out;
}

}  // namespace troupe::net::wire
