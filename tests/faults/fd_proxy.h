/* A slow path on loopback: a TCP proxy in front of redis-server that holds
 * every chunk of bytes, in both directions, for a settable delay.  Stands in
 * for tc netem, which this kernel lacks (sch_netem is not available). */
#ifndef LW_FAULTS_PROXY_H
#define LW_FAULTS_PROXY_H

struct fd_proxy;

/* Listen on a free loopback port and forward to 127.0.0.1:target_port
 * (read again for each new connection, so a restarted server is found).
 * NULL on error (printed). */
struct fd_proxy *fd_proxy_start(int target_port);
int fd_proxy_port(const struct fd_proxy *p);

/* Delay applied to bytes read from now on (one way; a round trip pays it
 * twice).  Bytes keep their order: a shorter delay never overtakes. */
void fd_proxy_set_delay(struct fd_proxy *p, int ms);

void fd_proxy_stop(struct fd_proxy *p);

#endif
