#pragma once
// An OpenAI-compatible endpoint URL taken apart: "http://host:port[/prefix]" plus the
// route for completions or chat. Only plain http: remote boxes are reached through an
// SSH tunnel on loopback, never over an open port.

#include <cstdint>
#include <string>

namespace crosslab::bench {

struct EndpointUrl {
  std::string host;  // "127.0.0.1", "localhost", "[::1]" without brackets
  std::uint16_t port = 80;
  std::string path;  // "/v1/completions"
  std::string hostHeader;
};

// `kind` is "completions" or "chat". A URL that already ends in the route is used as
// is; "…/v1" gets "/completions" or "/chat/completions"; otherwise "/v1/…" is added.
// Throws std::invalid_argument with a one-line reason.
EndpointUrl parseEndpointUrl(const std::string& url, const std::string& kind);

}  // namespace crosslab::bench
