// What a C++ definition must be to be woven, and what C++ does not take yet.
#include <lockweave.h>
#include <string>

// A class return type has no zero value: on_fail is required.
REDIS_LOCK("name:{id}", 1s, 1s)
std::string name(int id) { return std::to_string(id); }

static int cell;
REDIS_LOCK("cell", 1s, 1s)
int &ref() { return cell; }

REDIS_LOCK("free:{this->id}", 1s, 1s)
int plain(int id) { return id; }

struct S {
    REDIS_LOCK("s:{this->id}", 1s, 1s)
    static int count(int id) { return id; }
    REDIS_LOCK("s:{this->nope}", 1s, 1s)
    int get() const { return id; }
    REDIS_LOCK("s:{this}", 1s, 1s)
    int whole() const { return id; }
    int id;
};

REDIS_ONCE("once:{id}", 1m)
int once(int id) { return id; }

REDIS_LOCK("deduced", 1s, 1s)
auto deduced() { return 1; }

REDIS_LOCK("tried", 1s, 1s)
int tried() try { return 1; } catch (...) { return 0; }

struct T {
    REDIS_LOCK("t", 1s, 1s)
    T &operator=(const T &) = default;
};

REDIS_LOCK("ce", 1s, 1s)
constexpr int ce(int x) { return x; }

REDIS_LOCK("l", 1s, 1s, loop = nullptr)
void onloop() {}

// The key names the parameter as the annotated declaration does; the
// definition, where the lock is woven in, must name it too.
REDIS_LOCK("u:{id}", 1s, 1s)
int unnamed(int id);
int unnamed(int) { return 0; }


// Overloads are told apart: each definition matches its own declaration.
struct C {
    REDIS_LOCK("c:{x}", 1s, 1s)
    int over(int x);
    REDIS_LOCK("c:{x}", 2s, 1s)
    int over(long x);
};
int C::over(int x) { return x; }
REDIS_LOCK("c:{x}", 3s, 1s)
int C::over(long x) { return static_cast<int>(x); }


// expect: 6:1: error: 'name' returns 'std::string': give on_fail
// expect: 10:1: error: 'ref' returns 'int &': give on_fail
// expect: 13:18: error: '{this->id}' in the key of 'plain', which is not a non-static member function
// expect: 17:19: error: '{this->id}' in the key of 'count', which is not a non-static member function
// expect: 19:26: error: 'S' has no field named 'nope'
// expect: 21:19: error: '{this}': name a field of the object
// expect: 26:1: error: REDIS_ONCE on 'once': not in C++ yet
// expect: 30:1: error: 'deduced' has a deduced return type
// expect: 33:13: error: 'tried' is defined with a function-try-block
// expect: 37:8: error: REDIS_LOCK on 'operator=', which is defaulted
// expect: 41:1: error: REDIS_LOCK on 'ce', which is constexpr
// expect: 43:25: error: loop = on 'onloop': not in C++ yet
// expect: 48:15: error: 'id' in the key is unnamed in the definition of 'unnamed'
// expect: 61:1: error: conflicting REDIS_LOCK annotations on 'over'
// expect: 57:5: note: previous REDIS_LOCK is here
