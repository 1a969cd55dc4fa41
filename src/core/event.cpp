// Events: completion of enqueued work, over the backends' native events.
#include "encore/event.hpp"

#include "core/event_impl.hpp"

namespace encore {

void Event::wait() const {
  if (impl_) impl_->wait();
}

bool Event::done() const { return !impl_ || impl_->done(); }

Event Device::marker() const {
  if (!impl_) throw ArgumentError("Device::marker: null device");
  detail::OwnedEvent ev(impl_.get(), impl_->enqueue_marker());
  return ev ? Event(std::make_shared<detail::QueueEvent>(impl_, std::move(ev))) : Event();
}

void Device::wait_for(std::span<const Event> events) const {
  if (!impl_) throw ArgumentError("Device::wait_for: null device");
  if (!events.empty()) impl_->enqueue_wait(events);
}

}  // namespace encore
