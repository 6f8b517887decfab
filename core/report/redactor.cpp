#include "core/report/redactor.h"

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "core/store/lab_store.h"

namespace crosslab::report {
namespace {

bool isNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

// Token shapes of secrets, replaced outright (the guard only finds them).
const std::vector<std::regex>& secretShapes() {
  static const std::vector<std::regex> all = {
      std::regex("hf_[A-Za-z0-9]{30,}"), std::regex("sk-[A-Za-z0-9_-]{32,}"), std::regex("AKIA[0-9A-Z]{16}"),
      std::regex("gh[pousr]_[A-Za-z0-9]{36}"),
      std::regex("-----BEGIN [A-Z ]*PRIVATE KEY-----[\\s\\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)")};
  return all;
}

// Words that are user names on boxes but identify nobody.
bool commonUser(const std::string& u) {
  static const char* const common[] = {"root", "ubuntu", "admin", "user", "debian", "ec2-user"};
  return std::find(std::begin(common), std::end(common), u) != std::end(common);
}

}  // namespace

Redactor::Redactor(venues::SecretGuard guard, bool redact) : guard_(std::move(guard)), redact_(redact) {}

Redactor Redactor::fromLab(store::LabStore& lab, venues::SecretGuard guard, bool redact) {
  Redactor r(std::move(guard), redact);
  auto st = lab.db().prepare(
      "SELECT b.name, IFNULL(b.host, ''), IFNULL(b.ssh_user, ''), IFNULL(b.key_file, ''), v.name, "
      "IFNULL(v.provider, '') FROM boxes b JOIN venues v ON v.id = b.venue_id "
      "ORDER BY COALESCE(b.provisioned_at, '9999'), b.id");
  while (st.step()) {
    r.keepWord(st.text(4));
    r.keepWord(st.text(5));
    r.addBox(st.text(0), st.text(1));
    r.addUser(st.text(2));
    r.addKeyPath(st.text(3));
  }
  if (const char* u = std::getenv("USER")) r.addUser(u);
  if (const char* u = std::getenv("LOGNAME")) r.addUser(u);
  return r;
}

void Redactor::addBox(const std::string& name, const std::string& host) {
  for (auto& b : boxes_)
    if (b.name == name) {
      if (b.host.empty()) b.host = host;
      if (!host.empty() && host != b.host) boxes_.push_back({name, host, b.label});  // a new address, same label
      return;
    }
  boxes_.push_back({name, host, "BOX-" + std::to_string(boxes_.size() + 1)});
}

void Redactor::addUser(const std::string& user) {
  if (user.empty() || std::find(users_.begin(), users_.end(), user) != users_.end()) return;
  users_.push_back(user);
}

void Redactor::addKeyPath(const std::string& path) {
  if (path.empty() || std::find(keys_.begin(), keys_.end(), path) != keys_.end()) return;
  keys_.push_back(path);
}

void Redactor::keepWord(const std::string& word) {
  if (!word.empty()) keep_.push_back(word);
}

std::string Redactor::boxLabel(const std::string& name) const {
  if (!redact_) return name;
  for (const auto& b : boxes_)
    if (b.name == name) return b.label;
  return name;
}

std::string Redactor::replaceWord(std::string text, const std::string& word, const std::string& by) const {
  if (word.empty()) return text;
  for (size_t pos = 0; (pos = text.find(word, pos)) != std::string::npos;) {
    const bool startOk = pos == 0 || !isNameChar(text[pos - 1]);
    const size_t after = pos + word.size();
    // A trailing '.' ends a sentence, not a host name.
    const bool endOk = after >= text.size() || !isNameChar(text[after]) ||
                       (text[after] == '.' && (after + 1 >= text.size() || !isNameChar(text[after + 1])));
    if (startOk && endOk) {
      text.replace(pos, word.size(), by);
      pos += by.size();
    } else {
      pos = after;
    }
  }
  return text;
}

std::string Redactor::text(const std::string& in) const {
  std::string out = guard_.redact(in);
  for (const auto& re : secretShapes()) out = std::regex_replace(out, re, "***");
  if (!redact_) return out;
  std::replace(out.begin(), out.end(), '\x01', '?');  // the placeholder mark below is ours alone

  // Key paths: the recorded ones, then anything that looks like one.
  for (const auto& k : keys_)
    for (size_t pos; (pos = out.find(k)) != std::string::npos;) out.replace(pos, k.size(), "[key]");
  static const std::regex keyPath(
      R"((~|/[A-Za-z0-9._-]+)*/(\.ssh/[A-Za-z0-9._-]+|[A-Za-z0-9._-]*(id_rsa|id_ed25519|id_ecdsa|id_dsa)[A-Za-z0-9._-]*|[A-Za-z0-9._-]+\.pem))");
  out = std::regex_replace(out, keyPath, "[key]");
  // user@host: the user goes, the host becomes its label (below) or [host].
  static const std::regex userAtHost(R"(([A-Za-z0-9._-]+)@([A-Za-z0-9.-]*[A-Za-z0-9]))");
  // Labels go in as placeholders and come out at the end, so that a label equal to another
  // box's name (BOX-1 named "BOX-2") is never replaced twice.
  std::vector<std::string> labels;
  auto placeholder = [&labels](const std::string& label) {
    labels.push_back(label);
    return "\x01" + std::to_string(labels.size() - 1) + "\x02";
  };
  std::string rebuilt;
  auto begin = std::sregex_iterator(out.begin(), out.end(), userAtHost);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    rebuilt += out.substr(last, static_cast<size_t>(m.position(0)) - last);
    std::string host = m.str(2);
    bool known = false;
    for (const auto& b : boxes_)
      if (host == b.host || host == b.name) {
        host = placeholder(b.label);
        known = true;
      }
    rebuilt += known ? host : "[host]";
    last = static_cast<size_t>(m.position(0) + m.length(0));
  }
  out = rebuilt + out.substr(last);
  // Recorded hosts and box names become labels (longest first, so a name inside a host stays whole).
  std::vector<std::pair<std::string, std::string>> words;
  for (const auto& b : boxes_) {
    if (!b.host.empty()) words.emplace_back(b.host, b.label);
    words.emplace_back(b.name, b.label);
  }
  std::sort(words.begin(), words.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [w, label] : words) out = replaceWord(out, w, placeholder(label));
  // Any other address.
  static const std::regex ipv4(R"(\b(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}\b)");
  static const std::regex ipv6(R"(\b([0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\b|\b([0-9A-Fa-f]{1,4}:)+:([0-9A-Fa-f]{1,4}:)*[0-9A-Fa-f]{1,4}\b)");
  out = std::regex_replace(out, ipv4, "[ip]");
  out = std::regex_replace(out, ipv6, "[ip]");
  // Home folders name their user.
  static const std::regex home(R"((/home|/Users)/[A-Za-z0-9._-]+)");
  out = std::regex_replace(out, home, "~");
  for (const auto& u : users_) {
    if (commonUser(u) || std::find(keep_.begin(), keep_.end(), u) != keep_.end()) continue;
    out = replaceWord(out, u, "[user]");
  }
  std::string final;
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t close = out[i] == '\x01' ? out.find('\x02', i) : std::string::npos;
    if (close == std::string::npos) {
      final += out[i];
      continue;
    }
    final += labels.at(std::stoul(out.substr(i + 1, close - i - 1)));
    i = close;
  }
  return final;
}

void Redactor::guardOutput(const std::string& out, const std::string& what) const { guard_.checkText(out, what); }

}  // namespace crosslab::report
