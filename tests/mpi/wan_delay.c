/* wan_delay: a fixed one-way delay for the wide-area lab (tests/scripts/wanlab.sh).
 *
 *     wan_delay IFNAME DELAY_US [SLOTS]
 *
 * Attaches to the TUN device IFNAME (made by `ip tuntap add ... mode tun`),
 * and writes every packet the kernel routes into it back into it DELAY_US
 * microseconds later, in arrival order: the router namespace sends the
 * forwarded traffic of both directions through it, so each direction gets
 * the delay once (this kernel has no netem).  At most SLOTS packets
 * (default 65536) wait at once; more are dropped and counted.  Prints
 * "ready" on stdout once attached, and on SIGTERM / SIGINT its counters on
 * stderr.  Not an MPI program (built with the test programs for the lab). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MTU_MAX 2048

struct slot {
    int64_t due;        /* CLOCK_MONOTONIC ns */
    uint16_t len;
    unsigned char data[MTU_MAX];
};

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s IFNAME DELAY_US [SLOTS]\n", argv[0]);
        return 2;
    }
    int64_t delay = strtoll(argv[2], NULL, 10) * 1000;
    size_t nslots = argc > 3 ? strtoul(argv[3], NULL, 10) : 65536;
    if (delay < 0 || nslots < 16) {
        fprintf(stderr, "wan_delay: bad delay or slot count\n");
        return 2;
    }
    struct slot *ring = malloc(nslots * sizeof *ring);
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (!ring || fd < 0) {
        perror("wan_delay: /dev/net/tun");
        return 1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", argv[1]);
    if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
        perror("wan_delay: TUNSETIFF");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    printf("ready\n");
    fflush(stdout);

    size_t head = 0, count = 0;             /* the waiting packets: ring[head .. head+count) */
    unsigned long long passed = 0, dropped = 0;
    while (!stop) {
        struct timespec ts, *tp = NULL;     /* until the oldest packet is due */
        if (count) {
            int64_t w = ring[head].due - now_ns();
            if (w < 0) w = 0;
            ts.tv_sec = (time_t)(w / 1000000000);
            ts.tv_nsec = (long)(w % 1000000000);
            tp = &ts;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = ppoll(&p, 1, tp, NULL);
        if (r < 0 && errno != EINTR) {
            perror("wan_delay: poll");
            break;
        }
        if (r > 0 && (p.revents & POLLIN)) {
            for (;;) {
                struct slot *s = &ring[(head + count) % nslots];
                unsigned char junk[MTU_MAX];
                ssize_t n = read(fd, count < nslots ? s->data : junk, MTU_MAX);
                if (n <= 0) break;
                if (count == nslots) { dropped++; continue; }
                s->len = (uint16_t)n;
                s->due = now_ns() + delay;
                count++;
            }
        }
        int64_t t = now_ns();
        while (count && ring[head].due <= t) {
            if (write(fd, ring[head].data, ring[head].len) < 0 && errno == EAGAIN) break;
            passed++;
            head = (head + 1) % nslots;
            count--;
        }
    }
    fprintf(stderr, "wan_delay: %llu packets passed, %llu dropped\n", passed, dropped);
    return 0;
}
