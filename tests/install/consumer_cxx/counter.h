/* A class whose member function lockweave weaves (counter.cpp). */
#ifndef CONSUMER_COUNTER_H
#define CONSUMER_COUNTER_H

#include <lockweave.h>

#include <cstdint>

class Counter
{
  public:
    explicit Counter(std::int64_t id) : id_(id)
    {
    }

    REDIS_LOCK("consumer:counter:{this->id_}", 5s, 2s)
    int bump(int by);

    long total() const
    {
        return total_;
    }

  private:
    std::int64_t id_;
    long total_ = 0;
};

#endif
