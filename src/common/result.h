// The one error vocabulary of colo: expected failures are values.
//
// A function that can fail returns Result<T> (a T or an Error) or Status
// (Result<void>). Exceptions are reserved for aborts and are caught once in
// main(). Error messages say what went wrong, where (file:line, job, device),
// and what the user can do about it, e.g.
//   "jobs.toml:12: key 'repeat' must be a positive integer, got -1".
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace colo {

// Whether trying the same thing again later may succeed: a database locked by
// another process or a full disk is transient; a bad input or a bug is not.
// kPermissionDenied is permanent too, and says why: the caller may not do it
// (another user's job, an admin's command); colo exits 5 for it.
enum class ErrorKind { kPermanent, kTransient, kPermissionDenied };

class Error {
 public:
  explicit Error(std::string message, ErrorKind kind = ErrorKind::kPermanent)
      : message_(std::move(message)), kind_(kind) {}

  const std::string& message() const { return message_; }
  bool transient() const { return kind_ == ErrorKind::kTransient; }
  bool permission_denied() const { return kind_ == ErrorKind::kPermissionDenied; }

  // Returns a copy with "context: " prepended, for adding the file, job or
  // step in which a lower-level error happened. The kind is kept.
  Error with_context(std::string_view context) const {
    return Error(std::string(context) + ": " + message_, kind_);
  }

 private:
  std::string message_;
  ErrorKind kind_;
};

// Holds either a value or an Error. Accessing the value of an error result
// (or the error of a value result) is a programming error (asserts).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<1>(state_);
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error)
      : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_{""};
  bool ok_ = true;
};

using Status = Result<void>;

inline Status OkStatus() { return {}; }

}  // namespace colo
