// Memory maps that survive their file shrinking. Reading a page of a shared file mapping that
// lies wholly past the file's end raises SIGBUS, which would kill the process with no
// message: a store truncated (or rewritten in place, shorter) while a run reads it. The guard
// installs a SIGBUS handler that, for a fault inside a registered mapping, maps a page of
// zeros over the faulting page and marks the mapping as faulted, then returns: the access
// completes and reads zeros. The owner of the mapping checks faulted() after reading from it
// and reports the change as an error instead of using what it read (MappedReadableFile's
// check_unchanged, called by the reader). A SIGBUS outside every registered mapping goes to
// the handler that was installed before, or kills the process as it would have.
//
// Why this and not pread for everything: the mapping is what lets rows read on their own
// (ReaderOptions::direct_rows) cost a page fault rather than a system call each, and what
// Store::open and the feature statistics view in place; and why not siglongjmp out of the
// handler: the fault happens inside decoders and memcpy, with locks and allocations that a
// jump would leave half done. Replacing the page needs no unwinding at all.
#pragma once

#include <cstddef>

namespace agld::mapping_guard {

// Registers [begin, begin + size), a read-only mapping. Returns its slot, or -1 when every
// slot is taken (the mapping is then unguarded, as before the guard existed).
int add(const void* begin, size_t size);
// Unregisters a slot (before the mapping is unmapped). -1 is ignored.
void remove(int slot);
// Whether a read of the slot's mapping faulted (and read zeros).
bool faulted(int slot);

}  // namespace agld::mapping_guard
