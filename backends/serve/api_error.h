#pragma once
// An error answered as vLLM's JSON error body with an HTTP status:
// {"error": {"message", "type", "param", "code"}}.

#include <stdexcept>
#include <string>

namespace crosslab::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {})
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)) {}
  static ApiError badRequest(const std::string& message, const std::string& param = {}) {
    return ApiError(400, "BadRequestError", message, param);
  }
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }

 private:
  int status_;
  std::string type_;
  std::string param_;
};

// The JSON body text for an error (no trailing newline).
std::string errorBody(int status, const std::string& type, const std::string& message, const std::string& param = {});

}  // namespace crosslab::serve
