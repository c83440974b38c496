// Testbench-only reader for the harness's kernel dumps (src/eagle4/cases/dump.py): an
// uncompressed (stored) .npz written by numpy.savez holding .npy entries and a 0-d unicode
// `meta_json` entry. Header-only; uses the STL (never included by kernel code).
//
//   eagle4::tb::Npz npz = eagle4::tb::load_npz("case.npz");     // throws eagle4::tb::NpzError
//   const eagle4::tb::NpyArray& a = npz.at("topk_probas_sampling");
//   eagle4::tb::Json meta = eagle4::tb::parse_json(npz.meta_json());
//   int64_t B = meta["params"]["batch_size"].as_int();
//
// Zip: central directory (zip64 included, as numpy.savez forces zip64 entries), method 0
// (stored) only: a deflated entry (numpy.savez_compressed) fails with a clear message.
// Npy: format v1/v2/v3, little-endian or byte-sized descr ('<f4', '<i8', '|b1', '<U12', ...),
// fortran_order False only.
#ifndef EAGLE4_TB_NPZ_HPP
#define EAGLE4_TB_NPZ_HPP

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace eagle4 {
namespace tb {

struct NpzError : std::runtime_error {
  explicit NpzError(const std::string& m) : std::runtime_error(m) {}
};

// One array: raw little-endian element bytes plus its numpy header fields.
struct NpyArray {
  std::string descr;           // e.g. "<f4", "|b1", "<U123"
  char kind = '?';             // 'f', 'i', 'u', 'b', 'U'
  int itemsize = 0;            // bytes per element
  std::vector<int64_t> shape;  // () for 0-d
  std::vector<uint8_t> data;   // numel * itemsize bytes

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  std::string shape_str() const {
    std::ostringstream s;
    s << "(";
    for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
    if (shape.size() == 1) s << ",";
    s << ")";
    return s.str();
  }
};

namespace detail {

inline uint16_t rd16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t rd32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
inline uint64_t rd64(const uint8_t* p) { return uint64_t(rd32(p)) | (uint64_t(rd32(p + 4)) << 32); }

inline void skip_ws(const std::string& s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
}

// Parse the python-literal dict of a .npy header: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
inline void parse_npy_header(const std::string& h, NpyArray& a, const std::string& where) {
  auto fail = [&](const std::string& m) { throw NpzError(where + ": bad .npy header (" + m + "): " + h); };
  auto find_key = [&](const char* key) -> size_t {
    std::string k1 = std::string("'") + key + "'";
    size_t p = h.find(k1);
    if (p == std::string::npos) fail(std::string("no ") + key);
    p += k1.size();
    skip_ws(h, p);
    if (p >= h.size() || h[p] != ':') fail(std::string("no ':' after ") + key);
    ++p;
    skip_ws(h, p);
    return p;
  };
  size_t p = find_key("descr");
  if (p >= h.size() || (h[p] != '\'' && h[p] != '"')) fail("descr is not a string (structured dtypes unsupported)");
  char q = h[p++];
  size_t e = h.find(q, p);
  if (e == std::string::npos) fail("unterminated descr");
  a.descr = h.substr(p, e - p);
  p = find_key("fortran_order");
  if (h.compare(p, 5, "False") != 0) fail("fortran_order must be False (dumps are C-contiguous)");
  p = find_key("shape");
  if (p >= h.size() || h[p] != '(') fail("shape is not a tuple");
  ++p;
  a.shape.clear();
  while (true) {
    skip_ws(h, p);
    if (p >= h.size()) fail("unterminated shape");
    if (h[p] == ')') break;
    char* endp = nullptr;
    long long v = std::strtoll(h.c_str() + p, &endp, 10);
    if (endp == h.c_str() + p || v < 0) fail("bad shape entry");
    a.shape.push_back(v);
    p = size_t(endp - h.c_str());
    skip_ws(h, p);
    if (p < h.size() && h[p] == ',') ++p;
  }
  // descr: byte order + kind + size
  if (a.descr.size() < 3) fail("bad descr '" + a.descr + "'");
  char order = a.descr[0];
  a.kind = a.descr[1];
  int n = std::atoi(a.descr.c_str() + 2);
  if (n <= 0) fail("bad descr size '" + a.descr + "'");
  if (a.kind == 'U') {
    a.itemsize = 4 * n;  // UTF-32 code units
  } else if (a.kind == 'f' || a.kind == 'i' || a.kind == 'u' || a.kind == 'b') {
    a.itemsize = n;
  } else {
    fail("unsupported dtype kind '" + std::string(1, a.kind) + "' (descr '" + a.descr + "')");
  }
  if (order == '>' && a.itemsize / (a.kind == 'U' ? 4 : 1) > 1)
    fail("big-endian data is unsupported (descr '" + a.descr + "')");
  if (order != '<' && order != '|' && order != '=' && order != '>') fail("bad byte order in '" + a.descr + "'");
}

inline NpyArray parse_npy(const uint8_t* p, uint64_t n, const std::string& where) {
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (n < 10 || std::memcmp(p, magic, 6) != 0) throw NpzError(where + ": not a .npy entry (bad magic)");
  int major = p[6];
  uint64_t hlen, off;
  if (major == 1) {
    hlen = rd16(p + 8);
    off = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) throw NpzError(where + ": truncated .npy header");
    hlen = rd32(p + 8);
    off = 12;
  } else {
    throw NpzError(where + ": unsupported .npy format version " + std::to_string(major));
  }
  if (off + hlen > n) throw NpzError(where + ": truncated .npy header");
  NpyArray a;
  parse_npy_header(std::string(reinterpret_cast<const char*>(p + off), hlen), a, where);
  uint64_t nbytes = uint64_t(a.numel()) * uint64_t(a.itemsize);
  if (off + hlen + nbytes > n)
    throw NpzError(where + ": truncated data (" + std::to_string(n - off - hlen) + " bytes for shape " +
                   a.shape_str() + " of '" + a.descr + "', need " + std::to_string(nbytes) + ")");
  a.data.assign(p + off + hlen, p + off + hlen + nbytes);
  return a;
}

}  // namespace detail

class Npz {
 public:
  std::string path;
  std::map<std::string, NpyArray> arrays;  // entry name without ".npy"

  bool has(const std::string& k) const { return arrays.count(k) != 0; }
  const NpyArray& at(const std::string& k) const {
    auto it = arrays.find(k);
    if (it == arrays.end()) throw NpzError(path + ": no entry '" + k + "'");
    return it->second;
  }
  // meta_json decoded from UTF-32LE to UTF-8, trailing NULs stripped.
  std::string meta_json() const {
    const NpyArray& a = at("meta_json");
    if (a.kind != 'U' || !a.shape.empty())
      throw NpzError(path + ": meta_json must be a 0-d unicode array, got '" + a.descr + "' " + a.shape_str());
    std::string out;
    for (size_t i = 0; i + 4 <= a.data.size(); i += 4) {
      uint32_t c = detail::rd32(&a.data[i]);
      if (c == 0) break;
      if (c < 0x80) {
        out += char(c);
      } else if (c < 0x800) {
        out += char(0xC0 | (c >> 6));
        out += char(0x80 | (c & 0x3F));
      } else if (c < 0x10000) {
        out += char(0xE0 | (c >> 12));
        out += char(0x80 | ((c >> 6) & 0x3F));
        out += char(0x80 | (c & 0x3F));
      } else if (c < 0x110000) {
        out += char(0xF0 | (c >> 18));
        out += char(0x80 | ((c >> 12) & 0x3F));
        out += char(0x80 | ((c >> 6) & 0x3F));
        out += char(0x80 | (c & 0x3F));
      } else {
        throw NpzError(path + ": meta_json holds an invalid code point");
      }
    }
    return out;
  }
};

inline Npz parse_npz(const std::vector<uint8_t>& buf, const std::string& path) {
  using namespace detail;
  Npz z;
  z.path = path;
  const uint64_t n = buf.size();
  const uint8_t* b = buf.data();
  if (n < 22) throw NpzError(path + ": not a zip file (too short: " + std::to_string(n) + " bytes)");
  // End of central directory: scan back over at most a 64 KiB comment.
  int64_t eocd = -1;
  for (int64_t i = int64_t(n) - 22; i >= 0 && i >= int64_t(n) - 22 - 65535; --i) {
    if (rd32(b + i) == 0x06054b50u) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw NpzError(path + ": not a zip file (no end-of-central-directory record; truncated?)");
  uint64_t count = rd16(b + eocd + 10);
  uint64_t cd_size = rd32(b + eocd + 12);
  uint64_t cd_off = rd32(b + eocd + 16);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
    if (eocd < 20 || rd32(b + eocd - 20) != 0x07064b50u)
      throw NpzError(path + ": zip64 end-of-central-directory locator missing");
    uint64_t z64 = rd64(b + eocd - 20 + 8);
    if (z64 + 56 > n || rd32(b + z64) != 0x06064b50u) throw NpzError(path + ": bad zip64 end-of-central-directory");
    count = rd64(b + z64 + 32);
    cd_size = rd64(b + z64 + 40);
    cd_off = rd64(b + z64 + 48);
  }
  if (cd_off + cd_size > n) throw NpzError(path + ": central directory out of range (truncated file?)");
  uint64_t p = cd_off;
  for (uint64_t e = 0; e < count; ++e) {
    if (p + 46 > n || rd32(b + p) != 0x02014b50u) throw NpzError(path + ": corrupt central directory entry");
    uint16_t flags = rd16(b + p + 8);
    uint16_t method = rd16(b + p + 10);
    uint64_t csize = rd32(b + p + 20), usize = rd32(b + p + 24);
    uint16_t name_len = rd16(b + p + 28), extra_len = rd16(b + p + 30), comment_len = rd16(b + p + 32);
    uint64_t loff = rd32(b + p + 42);
    if (p + 46 + name_len + extra_len + comment_len > n) throw NpzError(path + ": corrupt central directory entry");
    std::string name(reinterpret_cast<const char*>(b + p + 46), name_len);
    // zip64 extended information: present fields follow in the fixed order usize, csize, offset
    const uint8_t* x = b + p + 46 + name_len;
    for (uint64_t xi = 0; xi + 4 <= extra_len;) {
      uint16_t id = rd16(x + xi), len = rd16(x + xi + 2);
      if (xi + 4 + len > extra_len) break;
      if (id == 0x0001) {
        const uint8_t* f = x + xi + 4;
        uint64_t used = 0;
        if (usize == 0xFFFFFFFFu && used + 8 <= len) { usize = rd64(f + used); used += 8; }
        if (csize == 0xFFFFFFFFu && used + 8 <= len) { csize = rd64(f + used); used += 8; }
        if (loff == 0xFFFFFFFFu && used + 8 <= len) { loff = rd64(f + used); used += 8; }
      }
      xi += 4 + len;
    }
    p += 46 + name_len + extra_len + comment_len;
    if (flags & 1) throw NpzError(path + ": entry '" + name + "' is encrypted");
    if (method != 0)
      throw NpzError(path + ": entry '" + name + "' is compressed (zip method " + std::to_string(method) +
                     "); dumps must be written with numpy.savez (stored), not savez_compressed");
    if (csize != usize) throw NpzError(path + ": entry '" + name + "': stored sizes disagree");
    if (loff + 30 > n || rd32(b + loff) != 0x04034b50u)
      throw NpzError(path + ": entry '" + name + "': bad local header (truncated file?)");
    uint64_t data = loff + 30 + rd16(b + loff + 26) + rd16(b + loff + 28);
    if (data + csize > n)
      throw NpzError(path + ": entry '" + name + "': data runs past the end of the file (truncated?)");
    std::string key = name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    else throw NpzError(path + ": entry '" + name + "' is not a .npy file");
    z.arrays[key] = parse_npy(b + data, csize, path + ":" + name);
  }
  return z;
}

inline Npz load_npz(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw NpzError(path + ": cannot open file");
  std::vector<uint8_t> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npz(buf, path);
}

// ---------------------------------------------------------------------------------------------
// Minimal JSON (enough for meta_json): objects, arrays, strings, numbers, true/false/null.
// Numbers keep their source text so integers are read exactly as int64.

class Json {
 public:
  enum Type { Null, Bool, Number, String, Array, Object };
  Type type = Null;
  bool b = false;
  std::string text;  // String value, or the Number's source text
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  bool is_object() const { return type == Object; }
  bool has(const std::string& k) const {
    for (auto& m : members) if (m.first == k) return true;
    return false;
  }
  const Json& operator[](const std::string& k) const {
    for (auto& m : members) if (m.first == k) return m.second;
    throw NpzError("meta_json: no key '" + k + "'");
  }
  int64_t as_int() const {
    if (type == Bool) return b ? 1 : 0;
    if (type != Number) throw NpzError("meta_json: value is not a number");
    if (text.find_first_of(".eE") != std::string::npos) {
      double d = std::strtod(text.c_str(), nullptr);
      if (d != double(int64_t(d))) throw NpzError("meta_json: " + text + " is not an integer");
      return int64_t(d);
    }
    return std::strtoll(text.c_str(), nullptr, 10);
  }
  double as_double() const {
    if (type == Bool) return b ? 1.0 : 0.0;
    if (type != Number) throw NpzError("meta_json: value is not a number");
    return std::strtod(text.c_str(), nullptr);
  }
  const std::string& as_string() const {
    if (type != String) throw NpzError("meta_json: value is not a string");
    return text;
  }
};

namespace detail {
struct JsonParser {
  const std::string& s;
  size_t i = 0;
  int depth = 0;
  [[noreturn]] void fail(const std::string& m) {
    throw NpzError("meta_json: " + m + " at offset " + std::to_string(i));
  }
  void ws() { skip_ws(s, i); }
  Json value() {
    if (++depth > 64) fail("nesting too deep");
    ws();
    if (i >= s.size()) fail("unexpected end");
    Json v;
    char c = s[i];
    if (c == '{') {
      v.type = Json::Object;
      ++i;
      ws();
      if (i < s.size() && s[i] == '}') { ++i; --depth; return v; }
      while (true) {
        ws();
        if (i >= s.size() || s[i] != '"') fail("expected a string key");
        std::string k = str();
        ws();
        if (i >= s.size() || s[i] != ':') fail("expected ':'");
        ++i;
        v.members.emplace_back(k, value());
        ws();
        if (i < s.size() && s[i] == ',') { ++i; continue; }
        if (i < s.size() && s[i] == '}') { ++i; break; }
        fail("expected ',' or '}'");
      }
    } else if (c == '[') {
      v.type = Json::Array;
      ++i;
      ws();
      if (i < s.size() && s[i] == ']') { ++i; --depth; return v; }
      while (true) {
        v.items.push_back(value());
        ws();
        if (i < s.size() && s[i] == ',') { ++i; continue; }
        if (i < s.size() && s[i] == ']') { ++i; break; }
        fail("expected ',' or ']'");
      }
    } else if (c == '"') {
      v.type = Json::String;
      v.text = str();
    } else if (s.compare(i, 4, "true") == 0) {
      v.type = Json::Bool; v.b = true; i += 4;
    } else if (s.compare(i, 5, "false") == 0) {
      v.type = Json::Bool; i += 5;
    } else if (s.compare(i, 4, "null") == 0) {
      i += 4;
    } else if (c == '-' || (c >= '0' && c <= '9') || s.compare(i, 3, "NaN") == 0 ||
               s.compare(i, 8, "Infinity") == 0 || s.compare(i, 9, "-Infinity") == 0) {
      v.type = Json::Number;
      size_t j = i;
      if (s.compare(i, 3, "NaN") == 0) { v.text = "nan"; i += 3; }
      else if (s.compare(i, 8, "Infinity") == 0) { v.text = "inf"; i += 8; }
      else if (s.compare(i, 9, "-Infinity") == 0) { v.text = "-inf"; i += 9; }
      else {
        while (j < s.size() && std::strchr("+-0123456789.eE", s[j])) ++j;
        v.text = s.substr(i, j - i);
        i = j;
      }
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    --depth;
    return v;
  }
  std::string str() {
    ++i;  // opening quote
    std::string out;
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c != '\\') { out += c; continue; }
      if (i >= s.size()) fail("bad escape");
      char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i + 4 > s.size()) fail("bad \\u escape");
          uint32_t cp = uint32_t(std::strtoul(s.substr(i, 4).c_str(), nullptr, 16));
          i += 4;
          if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= s.size() && s[i] == '\\' && s[i + 1] == 'u') {
            uint32_t lo = uint32_t(std::strtoul(s.substr(i + 2, 4).c_str(), nullptr, 16));
            if (lo >= 0xDC00 && lo < 0xE000) { cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00); i += 6; }
          }
          if (cp < 0x80) out += char(cp);
          else if (cp < 0x800) { out += char(0xC0 | (cp >> 6)); out += char(0x80 | (cp & 0x3F)); }
          else if (cp < 0x10000) {
            out += char(0xE0 | (cp >> 12)); out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F));
          } else {
            out += char(0xF0 | (cp >> 18)); out += char(0x80 | ((cp >> 12) & 0x3F));
            out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F));
          }
          break;
        }
        default: fail("bad escape");
      }
    }
    if (i >= s.size()) fail("unterminated string");
    ++i;
    return out;
  }
};
}  // namespace detail

inline Json parse_json(const std::string& s) {
  detail::JsonParser p{s};
  Json v = p.value();
  p.ws();
  if (p.i != s.size()) p.fail("trailing characters");
  return v;
}

}  // namespace tb
}  // namespace eagle4

#endif  // EAGLE4_TB_NPZ_HPP
