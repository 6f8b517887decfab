#include "core/bench/endpoint_url.h"

#include <stdexcept>

namespace crosslab::bench {

namespace {
bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

EndpointUrl parseEndpointUrl(const std::string& url, const std::string& kind) {
  if (kind != "completions" && kind != "chat")
    throw std::invalid_argument("endpoint must be completions or chat, not '" + kind + "'");
  const std::string scheme = "http://";
  if (url.compare(0, scheme.size(), scheme) != 0)
    throw std::invalid_argument("URL must start with http:// (reach remote boxes through an SSH tunnel): " + url);
  std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  EndpointUrl ep;
  ep.hostHeader = authority;
  std::string portText;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) throw std::invalid_argument("bad IPv6 address in URL: " + url);
    ep.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') portText = authority.substr(close + 2);
  } else {
    const size_t colon = authority.rfind(':');
    ep.host = authority.substr(0, colon);
    if (colon != std::string::npos) portText = authority.substr(colon + 1);
  }
  if (ep.host.empty()) throw std::invalid_argument("URL has no host: " + url);
  if (!portText.empty()) {
    size_t used = 0;
    int port = 0;
    try {
      port = std::stoi(portText, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != portText.size() || port < 1 || port > 65535)
      throw std::invalid_argument("bad port '" + portText + "' in URL: " + url);
    ep.port = static_cast<std::uint16_t>(port);
  }
  const std::string route = kind == "chat" ? "/chat/completions" : "/completions";
  if (endsWith(path, route))
    ep.path = path;
  else if (endsWith(path, "/v1"))
    ep.path = path + route;
  else
    ep.path = path + "/v1" + route;
  return ep;
}

}  // namespace crosslab::bench
