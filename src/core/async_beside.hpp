#pragma once
// Work started beside the caller's (a program's second reading of its source beside the driver's
// build; a saved unit's buffers beside its programs' build): on a thread of its own, or, where no
// thread can be started, deferred to the future's get(), which then runs it on the caller's thread
// after what the caller did meanwhile. get() gives its result or rethrows what it threw; a future
// of the first kind waits for the work when destroyed, one of the second never runs it.
//   auto aside = detail::async_beside([&] { return read_more(); });  build();  auto r = aside.get();
#include <future>
#include <system_error>
#include <utility>

#include "testing.hpp"

namespace encore::detail {

template <class F> auto async_beside(F work) {
  try {
    ENCORE_TESTING_DO(if (testing::fail_thread_start) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));)
    return std::async(std::launch::async, work);
  } catch (const std::system_error&) {
    ENCORE_TESTING_DO(++testing::beside_deferred;)
    return std::async(std::launch::deferred, std::move(work));
  }
}

}  // namespace encore::detail
