// The reader's read and decode threads (decode_pool.hpp).
#include "reader/decode_pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace agld::reader {

void name_this_thread(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

DecodePool::DecodePool(size_t readers, size_t decoders, Read read, Decode decode)
    : read_(std::move(read)), decode_(std::move(decode)) {
  for (size_t i = 0; i < readers; ++i) {
    threads_.emplace_back([this] {
      name_this_thread("agld-read");
      run_read();
    });
  }
  for (size_t i = 0; i < decoders; ++i) {
    threads_.emplace_back([this] {
      name_this_thread("agld-decode");
      run_decode();
    });
  }
}

DecodePool::~DecodePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  to_read_cv_.notify_all();
  to_decode_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void DecodePool::submit(std::shared_ptr<ChunkBox> box) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    to_read_.push_back(std::move(box));
  }
  to_read_cv_.notify_one();
}

void DecodePool::run_read() {
  for (;;) {
    ReadJob job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      to_read_cv_.wait(lock, [this] { return stop_ || !to_read_.empty(); });
      if (stop_) return;  // the reader is going: nobody waits for the rest
      job.box = std::move(to_read_.front());
      to_read_.pop_front();
      if (!buffers_.empty()) {
        job.buffer = std::move(buffers_.back());
        buffers_.pop_back();
      }
    }
    job.status = read_(job.box.get(), &job.buffer, &job.bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      to_decode_.push_back(std::move(job));
    }
    to_decode_cv_.notify_one();
  }
}

void DecodePool::run_decode() {
  for (;;) {
    ReadJob job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      to_decode_cv_.wait(lock, [this] { return stop_ || !to_decode_.empty(); });
      if (stop_) return;
      // The first placed of those read: reads may complete out of order.
      auto first = std::min_element(to_decode_.begin(), to_decode_.end(),
                                    [](const ReadJob& a, const ReadJob& b) { return a.box->seq < b.box->seq; });
      job = std::move(*first);
      to_decode_.erase(first);
    }
    decode_(job.box.get(), job.status, job.bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      buffers_.push_back(std::move(job.buffer));
    }
  }
}

}  // namespace agld::reader
