// Eager execution of a built item: each kind runs itself (src/exec/*_item.cpp); the public entry
// points that check arguments and build the items live with their kind.
#include "encore/device.hpp"
#include "exec/flow.hpp"
#include "exec/kind.hpp"
#include "exec/eager.hpp"

namespace encore {

using namespace detail;

namespace detail {

void run_item_eager(const ExecItem& item) {
  check_not_in_host("issue device work");
  if (dry_tracing()) return;  // recorded only: an alternative the step does not take
  kind_of(item).run_eager(item);
}

}  // namespace detail

void Device::run(const ExecItem& item) const { detail::kind_of(item).submit(item); }

}  // namespace encore
