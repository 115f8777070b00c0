/* The woven functions of loop_locked.c, declared without their
 * annotations, and what their bodies call back in loop.c. */
#ifndef GEN_LOOP_H
#define GEN_LOOP_H

#include <lockweave.h>
#include <stdint.h>

/* A struct argument passed by value: its copy is what the body sees. */
struct payload {
    int seq;
    char tag[16];
};

/* The loop every woven function below runs its body on, but on_loop(). */
extern lw_loop *the_loop;

void section(const char *key, int seq, struct payload p);
uint64_t fence_again(const char *key);
void busy(int id);
void on_loop(lw_loop *lp, int id);
void once(int id);

void section_body(const char *key, int seq, const struct payload *p);
void section_failed(int seq, int status);
void busy_ran(int id);
void busy_failed(int id, int status);
void on_loop_ran(int id);
void on_loop_failed(int id, int status);
int done_already(int id);
void once_ran(int id);

#endif
