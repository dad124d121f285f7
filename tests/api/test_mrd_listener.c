/* The library's MRD listener over a real socket on 127.0.0.1 (port 0: one
 * the OS picks): a client streams CONFIG, HEADER, a three-slice radial
 * stream and CLOSE and gets three IMAGEs and CLOSE; the callbacks see the
 * connection start, the header once, every acquisition, every image and
 * the end with its counts, and the log line the CLI prints. A waiting stop
 * ends a connection that sends nothing (its blocked read returns) and
 * returns after its callbacks; an ending stop returns at once and the
 * connection ends all the same, `released` last; bad specs are refused
 * with the line. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lm_config.h"
#include "lm_test.h"

#if LM_HAVE_ISMRMRD
#include "larmor.h"
#include "mrd_craft.h"
#include "mrd_slices_craft.h"

typedef struct seen {
    pthread_mutex_t lock;
    int started, headers, acqs, images, ended, released;
    int ended_before_released;
    lm_mrd_listener_end end;
    char log[1024];
} seen;

static void on_log(void *user, const char *line)
{
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    snprintf(s->log, sizeof s->log, "%s", line);
    pthread_mutex_unlock(&s->lock);
}

static void on_started(void *user, unsigned long id, const char *peer)
{
    seen *s = user;
    CHECK(id >= 1 && strncmp(peer, "127.0.0.1:", 10) == 0);
    pthread_mutex_lock(&s->lock);
    s->started++;
    pthread_mutex_unlock(&s->lock);
}

static void on_received(void *user, unsigned long id, const lm_mrd_msg *m)
{
    seen *s = user;
    (void)id;
    pthread_mutex_lock(&s->lock);
    if (m->id == LM_MRD_MSG_HEADER && m->text && strstr(m->text, "ismrmrdHeader"))
        s->headers++;
    else if (m->id == LM_MRD_MSG_ACQUISITION && m->data)
        s->acqs++;
    pthread_mutex_unlock(&s->lock);
}

static void on_image(void *user, unsigned long id, const lm_mrd_msg *m)
{
    seen *s = user;
    (void)id;
    pthread_mutex_lock(&s->lock);
    if (m->id == LM_MRD_MSG_IMAGE && m->pixels)
        s->images++;
    pthread_mutex_unlock(&s->lock);
}

static void on_ended(void *user, const lm_mrd_listener_end *e)
{
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    s->ended++;
    s->end = *e;
    s->end.peer = NULL; /* valid during the call only */
    s->end.error = NULL;
    pthread_mutex_unlock(&s->lock);
}

static void on_released(void *user)
{
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    s->released++;
    s->ended_before_released = s->ended;
    pthread_mutex_unlock(&s->lock);
}

static int get(seen *s, const int *field)
{
    pthread_mutex_lock(&s->lock);
    const int v = *field;
    pthread_mutex_unlock(&s->lock);
    return v;
}

static int send_all(int fd, const lm_mrd_msg *m)
{
    char *w;
    size_t n;
    lm_error err = {0};
    if (lm_mrd_msg_write(m, &w, &n, &err) != LM_OK)
        return -1;
    const ssize_t k = send(fd, w, n, MSG_NOSIGNAL);
    free(w);
    return k == (ssize_t)n ? 0 : -1;
}

static int fd_read(void *user, void *buf, size_t n)
{
    const int fd = *(int *)user;
    size_t got = 0;
    while (got < n) {
        const ssize_t k = recv(fd, (char *)buf + got, n - got, 0);
        if (k <= 0)
            return got == 0 && k == 0 ? 1 : -1;
        got += (size_t)k;
    }
    return 0;
}

static int connect_to(int port)
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    return fd;
}

static void start(seen *s, lm_mrd_listener **l)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    lm_mrd_listener_cfg cfg;
    lm_mrd_listener_cfg_init(&cfg);
    cfg.user = s;
    cfg.log = on_log;
    cfg.started = on_started;
    cfg.received = on_received;
    cfg.image_sent = on_image;
    cfg.ended = on_ended;
    cfg.released = on_released;
    lm_error err = {0};
    CHECK(lm_mrd_listener_start("127.0.0.1:0", &cfg, l, &err) == LM_OK);
    CHECK(*l && lm_mrd_listener_port(*l) > 0 && lm_mrd_listener_is_loopback(*l));
    CHECK(strcmp(lm_mrd_listener_host(*l), "127.0.0.1") == 0);
}

static void test_stream(void)
{
    static sl_file F;
    char xml[4096];
    craft_xml(xml, sizeof xml, SL_N, 1, 240, "radial");
    sl_make(&F, sl_z);
    seen s;
    lm_mrd_listener *l = NULL;
    start(&s, &l);
    int fd = connect_to(lm_mrd_listener_port(l));
    const char *conf = "--method cg --iters 3 --lambda 0.01 --variant cpu-nufft";
    lm_mrd_msg c = {.id = LM_MRD_MSG_CONFIG_TEXT, .text = (char *)conf, .text_len = strlen(conf)};
    lm_mrd_msg h = {.id = LM_MRD_MSG_HEADER, .text = xml, .text_len = strlen(xml)};
    CHECK(send_all(fd, &c) == 0 && send_all(fd, &h) == 0);
    for (int i = 0; i < SL_NACQ; i++) {
        lm_mrd_msg m = {.id = LM_MRD_MSG_ACQUISITION, .acq = F.acq[i].head, .traj = (float *)F.acq[i].traj,
                        .data = (float *)F.acq[i].data};
        CHECK(send_all(fd, &m) == 0);
    }
    lm_mrd_msg cl = {.id = LM_MRD_MSG_CLOSE};
    CHECK(send_all(fd, &cl) == 0);
    lm_mrd_reader r = {fd_read, &fd};
    int images = 0, closed = 0;
    lm_error err = {0};
    for (;;) {
        lm_mrd_msg m;
        if (lm_mrd_msg_read(&r, NULL, &m, NULL, &err) != LM_OK)
            break;
        images += m.id == LM_MRD_MSG_IMAGE;
        closed = m.id == LM_MRD_MSG_CLOSE;
        lm_mrd_msg_clear(&m);
        if (closed)
            break;
    }
    CHECK(images == SL_NSL && closed);
    close(fd);
    /* the waiting stop returns after the connection's last callback */
    lm_mrd_listener_stop(l, LM_MRD_LISTENER_WAIT);
    CHECK(s.started == 1 && s.headers == 1 && s.acqs == SL_NACQ && s.images == SL_NSL && s.ended == 1);
    CHECK(s.released == 1 && s.ended_before_released == 1);
    CHECK(s.end.rc == LM_OK && s.end.stats.received == SL_NACQ && s.end.stats.images == SL_NSL);
    CHECK(strstr(s.log, "MRD connection 1 (127.0.0.1:") && strstr(s.log, "36 acquisitions, 3 images in"));
    pthread_mutex_destroy(&s.lock);
}

/* A client that connects, configures and then says nothing: the waiting
 * stop shuts its socket, its read returns, it ends (no CLOSE); `released`
 * comes last, before a waiting stop returns or after an ending one did. */
static void test_stop_with_silent_client(int how)
{
    seen s;
    lm_mrd_listener *l = NULL;
    start(&s, &l);
    int fd = connect_to(lm_mrd_listener_port(l));
    lm_mrd_msg c = {.id = LM_MRD_MSG_CONFIG_TEXT, .text = (char *)"", .text_len = 0};
    CHECK(send_all(fd, &c) == 0);
    /* the connection is being served once its thread has started */
    while (!get(&s, &s.started))
        usleep(1000);
    lm_mrd_listener_stop(l, how);
    if (how == LM_MRD_LISTENER_ENDING) /* returns at once; the connection ends on its own */
        while (!get(&s, &s.released))
            usleep(1000);
    /* ended by the stop between messages, or its read cut by the shutdown */
    CHECK(s.ended == 1 && s.end.rc == LM_ERR_CANCELLED && s.end.stats.received == 0);
    CHECK(strstr(s.log, "MRD connection 1 (127.0.0.1:") && strstr(s.log, "error: the server stopped"));
    CHECK(s.released == 1 && s.ended_before_released == 1);
    close(fd);
    pthread_mutex_destroy(&s.lock);
}

static void test_bad_specs(void)
{
    lm_mrd_listener_cfg cfg;
    lm_mrd_listener_cfg_init(&cfg);
    const char *bad[] = {"65536", "127.0.0.1:-1", "127.0.0.1:", "localhost:9002", ":9002", "9002x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        lm_mrd_listener *l = (lm_mrd_listener *)&cfg; /* set to NULL on failure */
        lm_error err = {0};
        CHECK(lm_mrd_listener_start(bad[i], &cfg, &l, &err) == LM_ERR_INVALID && l == NULL);
        CHECK(strncmp(err.msg, bad[i], strlen(bad[i])) == 0 && strstr(err.msg, ": "));
    }
    char host[16];
    int port = -1;
    lm_error err = {0};
    CHECK(lm_mrd_listener_parse("9002", host, sizeof host, &port, &err) == LM_OK && port == 9002 &&
          strcmp(host, "127.0.0.1") == 0);
    CHECK(lm_mrd_listener_parse("0.0.0.0:0", host, sizeof host, &port, &err) == LM_OK && port == 0 &&
          strcmp(host, "0.0.0.0") == 0);
    /* a port in use: the line says why */
    seen s;
    lm_mrd_listener *a = NULL, *b = NULL;
    start(&s, &a);
    char spec[32];
    snprintf(spec, sizeof spec, "127.0.0.1:%d", lm_mrd_listener_port(a));
    CHECK(lm_mrd_listener_start(spec, &cfg, &b, &err) == LM_ERR_IO && b == NULL && strstr(err.msg, spec));
    lm_mrd_listener_stop(a, LM_MRD_LISTENER_WAIT);
    CHECK(s.started == 0 && s.ended == 0 && s.released == 1);
    pthread_mutex_destroy(&s.lock);
}

int main(void)
{
    test_stream();
    test_stop_with_silent_client(LM_MRD_LISTENER_WAIT);
    test_stop_with_silent_client(LM_MRD_LISTENER_ENDING);
    test_bad_specs();
    return lm_test_finish("api-mrd_listener");
}
#else
int main(void)
{
    LM_TEST_SKIP("built without libismrmrd");
}
#endif
