# Background worker that drains the job queue and warms the cache.
require "json"
require_relative "cache"

module Workers
  class CacheWarmer
    def initialize(queue, cache)
      @queue = queue
      @cache = cache
    end

    def run_once
      job = @queue.pop
      return false if job.nil?

      @cache.put(job["key"], JSON.parse(job["payload"]))
      true
    end

    def drain(limit = 100)
      processed = 0
      processed += 1 while processed < limit && run_once
      processed
    end
  end
end

def build_warmer(queue, cache)
  Workers::CacheWarmer.new(queue, cache)
end
