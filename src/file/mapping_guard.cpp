#include "file/mapping_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace agld::mapping_guard {
namespace {

// Fixed slots and atomics only: the handler reads them, and may run on any thread at any
// moment. A slot is free (state 0), being filled (1), or guarding [begin, end) (2).
constexpr int kSlots = 256;
struct Slot {
  std::atomic<int> state{0};
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<bool> faulted{false};
};
Slot g_slots[kSlots];
uintptr_t g_page = 4096;
struct sigaction g_previous;

void pass_on(int sig, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    // Not ours and no handler before: the default action. Returning re-runs the access,
    // which faults again, and kills the process with SIGBUS as it would have.
    signal(SIGBUS, SIG_DFL);
  }
}

extern "C" void on_sigbus(int sig, siginfo_t* info, void* context) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) != 2) continue;
    if (at < s.begin.load(std::memory_order_relaxed) || at >= s.end.load(std::memory_order_relaxed)) continue;
    void* page = reinterpret_cast<void*>(at & ~(g_page - 1));
    // mmap is a plain system call on Linux (not on POSIX's async-signal-safe list, but it
    // takes no lock of the process's).
    if (mmap(page, g_page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      s.faulted.store(true, std::memory_order_release);
      return;
    }
    break;
  }
  pass_on(sig, info, context);
}

void install() {
  g_page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_previous);
}

}  // namespace

int add(const void* begin, size_t size) {
  static std::once_flag once;
  std::call_once(once, install);
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
      const auto b = reinterpret_cast<uintptr_t>(begin);
      g_slots[i].begin.store(b, std::memory_order_relaxed);
      g_slots[i].end.store(b + size, std::memory_order_relaxed);
      g_slots[i].faulted.store(false, std::memory_order_relaxed);
      g_slots[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void remove(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].state.store(0, std::memory_order_release);
}

bool faulted(int slot) {
  return slot >= 0 && slot < kSlots && g_slots[slot].faulted.load(std::memory_order_acquire);
}

}  // namespace agld::mapping_guard
