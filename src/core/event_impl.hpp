#pragma once
// What an encore::Event refers to: one queue's event, or several (src/core/event.cpp).
#include <memory>
#include <vector>
#include "core/device_impl.hpp"
#include "core/owned_event.hpp"

namespace encore::detail {

// What an encore::Event refers to.
struct EventImpl {
  virtual ~EventImpl() = default;
  virtual void wait() = 0;
  virtual bool done() = 0;
};

// An event of one device's queue, owned: `dev` keeps the device alive while the handle (and the
// OpenCL interop's cl_event, ev.get()) is held; `ev` releases the event once, after it.
struct QueueEvent final : EventImpl {
  QueueEvent(std::shared_ptr<DeviceImpl> d, NativeEvent* e) : dev(std::move(d)), ev(dev.get(), e) {}
  QueueEvent(std::shared_ptr<DeviceImpl> d, OwnedEvent e) : dev(std::move(d)), ev(std::move(e)) {}
  void wait() override { ev.wait(); }
  bool done() override { return ev.done(); }
  std::shared_ptr<DeviceImpl> dev;  // declared first: destroyed after `ev` is released
  OwnedEvent ev;
};

// Completes when every part has.
struct AllEvent final : EventImpl {
  std::vector<std::shared_ptr<EventImpl>> parts;
  void wait() override {
    for (auto& p : parts) p->wait();
  }
  bool done() override {
    for (auto& p : parts)
      if (!p->done()) return false;
    return true;
  }
};

}  // namespace encore::detail
