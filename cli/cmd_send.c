/* larmor-cli send: the MRD streaming client. Streams an ISMRMRD file's
 * header and acquisitions to a server (larmor-cli serve --mrd, or any MRD
 * server), receives the images while it sends (a thread, so that neither
 * side's buffers can fill and block the other) and writes them as one
 * volume: one image as it is, the slices of 2D images stacked by position
 * along their slice direction, as larmor-cli recon stacks a multi-slice
 * file. */
#include "larmor.h"

#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli_data.h"
#include "cli_util.h"
#include "commands.h"

static void help(void)
{
    puts("usage: larmor-cli send FILE.h5 --to HOST:PORT --out OUT [--config TEXT | --preset NAME] [--complex]\n"
         "  Streams the ISMRMRD file's header and acquisitions to an MRD server (larmor-cli serve --mrd) and\n"
         "  writes the images it answers with: OUT .nii, .nii.gz (magnitude unless --complex) or .cfl.\n"
         "  --config TEXT: the reconstruction options (larmor-cli recon's: '--method cg --lambda 0.01'),\n"
         "  sent as CONFIG_TEXT; --preset NAME: a preset of the server's preset folder (CONFIG_FILE);\n"
         "  --complex: asks for complex images. Several 2D slices are stacked along their slice direction.");
}

#if !LM_HAVE_ISMRMRD
int cmd_send(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        help();
        return 0;
    }
    return cli_errorf("send: built without libismrmrd");
}
#else

#include <ismrmrd/dataset.h>


typedef struct conn_io {
    int fd;
} conn_io;

static int fd_read(void *user, void *buf, size_t n)
{
    const conn_io *c = user;
    size_t got = 0;
    while (got < n) {
        const ssize_t k = recv(c->fd, (char *)buf + got, n - got, 0);
        if (k <= 0)
            return got == 0 && k == 0 ? 1 : -1;
        got += (size_t)k;
    }
    return 0;
}

static int send_msg(int fd, const lm_mrd_msg *m, lm_error *err)
{
    char *b;
    size_t n;
    if (lm_mrd_msg_write(m, &b, &n, err) != LM_OK)
        return -1;
    const char *p = b;
    size_t left = n;
    while (left > 0) {
        const ssize_t k = send(fd, p, left, MSG_NOSIGNAL);
        if (k <= 0)
            break;
        p += k;
        left -= (size_t)k;
    }
    free(b);
    if (left)
        lm_fail(err, LM_ERR_IO, "the server closed the connection");
    return left ? -1 : 0;
}

/* What the receiving thread collects. */
typedef struct inbox {
    int fd;
    lm_mrd_msg *images;
    size_t n, cap;
    int closed;          /* CLOSE received */
    char error[512];     /* ERROR's text, or why receiving failed */
} inbox;

static void *receive(void *arg)
{
    inbox *in = arg;
    conn_io c = {in->fd};
    lm_mrd_reader r = {fd_read, &c};
    for (;;) {
        lm_mrd_msg m;
        lm_error err = {0};
        if (lm_mrd_msg_read(&r, NULL, &m, NULL, &err) != LM_OK) {
            snprintf(in->error, sizeof in->error, "%s", err.msg);
            break;
        }
        if (m.id == LM_MRD_MSG_CLOSE) {
            in->closed = 1;
            break;
        }
        if (m.id == LM_MRD_MSG_ERROR) {
            snprintf(in->error, sizeof in->error, "the server answered ERROR: %s", m.text ? m.text : "");
            lm_mrd_msg_clear(&m);
            break;
        }
        if (m.id != LM_MRD_MSG_IMAGE) {
            lm_mrd_msg_clear(&m);
            continue;
        }
        if (in->n == in->cap) {
            const size_t nc = in->cap ? 2 * in->cap : 16;
            lm_mrd_msg *p = realloc(in->images, nc * sizeof *p);
            if (!p) {
                lm_mrd_msg_clear(&m);
                snprintf(in->error, sizeof in->error, "out of memory");
                break;
            }
            in->images = p;
            in->cap = nc;
        }
        in->images[in->n++] = m;
    }
    shutdown(in->fd, SHUT_RD);
    return NULL;
}

static int connect_to(const char *spec, lm_error *err)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof host || !colon[1])
        return lm_fail(err, LM_ERR_INVALID, "--to %s: not HOST:PORT", spec), -1;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    const int g = getaddrinfo(host, colon + 1, &hints, &res);
    if (g)
        return lm_fail(err, LM_ERR_IO, "--to %s: %s", spec, gai_strerror(g)), -1;
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen)) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        lm_fail(err, LM_ERR_IO, "--to %s: cannot connect (is larmor-cli serve --mrd running there?)", spec);
    return fd;
}

/* Sends the configuration, the header and every acquisition, then CLOSE. */
static lm_code stream_file(int fd, ISMRMRD_Dataset *d, const char *path, const char *config, int config_is_file,
                           lm_error *err)
{
    lm_mrd_msg m = {.id = config_is_file ? LM_MRD_MSG_CONFIG_FILE : LM_MRD_MSG_CONFIG_TEXT, .text = (char *)config,
                    .text_len = strlen(config)};
    if (send_msg(fd, &m, err))
        return err->code;
    char *xml = ismrmrd_read_header(d);
    if (!xml)
        return lm_fail(err, LM_ERR_FORMAT, "%s: no MRD header", path);
    lm_mrd_msg hm = {.id = LM_MRD_MSG_HEADER, .text = xml, .text_len = strlen(xml)};
    const int hr = send_msg(fd, &hm, err);
    free(xml);
    if (hr)
        return err->code;
    const uint32_t n = ismrmrd_get_number_of_acquisitions(d);
    ISMRMRD_Acquisition acq;
    ismrmrd_init_acquisition(&acq);
    lm_code rc = LM_OK;
    for (uint32_t i = 0; i < n && rc == LM_OK; i++) {
        if (ismrmrd_read_acquisition(d, i, &acq) != ISMRMRD_NOERROR) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: cannot read acquisition %u", path, i);
            break;
        }
        lm_mrd_msg am = {.id = LM_MRD_MSG_ACQUISITION, .acq = acq.head, .traj = acq.traj, .data = (float *)acq.data};
        if (send_msg(fd, &am, err))
            rc = err->code;
    }
    ismrmrd_cleanup_acquisition(&acq);
    if (rc == LM_OK) {
        lm_mrd_msg cl = {.id = LM_MRD_MSG_CLOSE};
        if (send_msg(fd, &cl, err))
            rc = err->code;
    }
    return rc;
}

/* The images as one volume: one image, or 2D slices of the lowest
 * repetition and contrast stacked as larmor-cli recon stacks them. */
static lm_code assemble(const inbox *in, lm_volume **out, int *skipped, lm_error *err)
{
    *out = NULL;
    *skipped = 0;
    if (in->n == 0)
        return lm_fail(err, LM_ERR_FORMAT, "the server sent no image");
    int rep = 65536, con = 65536;
    for (size_t i = 0; i < in->n; i++) {
        const ISMRMRD_ImageHeader *h = &in->images[i].image;
        if (h->repetition < rep || (h->repetition == rep && h->contrast < con))
            rep = h->repetition, con = h->contrast;
    }
    lm_mrd m = {0};
    m.slices = calloc(in->n, sizeof *m.slices);
    int32_t *image_of = malloc(65536 * sizeof *image_of); /* idx.slice -> image */
    if (!m.slices || !image_of) {
        free(m.slices);
        free(image_of);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < 65536; k++)
        image_of[k] = -1;
    const ISMRMRD_ImageHeader *h0 = NULL;
    for (size_t i = 0; i < in->n; i++) {
        const ISMRMRD_ImageHeader *h = &in->images[i].image;
        if (h->repetition != rep || h->contrast != con) {
            (*skipped)++;
            continue;
        }
        if (!h0)
            h0 = h;
        if (h->matrix_size[0] != h0->matrix_size[0] || h->matrix_size[1] != h0->matrix_size[1] ||
            h->matrix_size[2] != h0->matrix_size[2] || h->channels != 1 ||
            (h->data_type != ISMRMRD_FLOAT && h->data_type != ISMRMRD_CXFLOAT)) {
            free(m.slices);
            free(image_of);
            return lm_fail(err, LM_ERR_FORMAT, "image %zu: not one float channel of the first image's matrix", i);
        }
        if (image_of[h->slice] >= 0) {
            free(m.slices);
            free(image_of);
            return lm_fail(err, LM_ERR_FORMAT, "two images of slice %u in repetition %d", h->slice, rep);
        }
        image_of[h->slice] = (int32_t)i;
        lm_mrd_slice *s = &m.slices[m.nslices++];
        s->index = h->slice;
        for (int a = 0; a < 3; a++) {
            s->position[a] = h->position[a];
            s->read_dir[a] = h->read_dir[a];
            s->phase_dir[a] = h->phase_dir[a];
            s->slice_dir[a] = h->slice_dir[a];
        }
    }
    const int ns = m.nslices;
    if (ns > 1 && h0->matrix_size[2] != 1) {
        free(m.slices);
        free(image_of);
        return lm_fail(err, LM_ERR_FORMAT, "%d 3D images of one repetition: nothing to stack them by", ns);
    }
    lm_geom_init(&m.geom, h0->matrix_size[0], h0->matrix_size[1], h0->matrix_size[2], h0->field_of_view[0]);
    for (int a = 0; a < 3; a++)
        m.geom.fov_mm[a] = h0->field_of_view[a];
    double aff[4][4], vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = h0->field_of_view[a] > 0 ? h0->field_of_view[a] / h0->matrix_size[a] : 1.0;
    lm_code rc = LM_OK;
    if (ns > 1) {
        lm_mrd_sort_slices(&m); /* as the reader orders a file's slices */
        rc = lm_mrd_slices_affine(&m, aff, vox, err);
    }
    const int64_t dims[3] = {h0->matrix_size[0], h0->matrix_size[1], ns > 1 ? ns : h0->matrix_size[2]};
    lm_volume *v = rc == LM_OK ? lm_volume_new(dims, vox, err) : NULL;
    if (!v) {
        free(m.slices);
        free(image_of);
        return rc != LM_OK ? rc : err->code;
    }
    if (ns > 1)
        memcpy(v->affine, aff, sizeof aff);
    const size_t per = (size_t)h0->matrix_size[0] * h0->matrix_size[1] * h0->matrix_size[2];
    for (int z = 0; z < ns; z++) {
        const lm_mrd_msg *im = &in->images[image_of[m.slices[z].index]];
        const float *p = im->pixels;
        lm_cfloat *dst = v->data + (size_t)z * per;
        for (size_t i = 0; i < per; i++)
            dst[i] = im->image.data_type == ISMRMRD_CXFLOAT ? p[2 * i] + I * p[2 * i + 1] : p[i];
    }
    free(m.slices);
    free(image_of);
    *out = v;
    return LM_OK;
}

int cmd_send(int argc, char **argv)
{
    static const struct option opts[] = {{"to", required_argument, 0, 't'}, {"out", required_argument, 0, 'o'},
                                         {"config", required_argument, 0, 'c'}, {"preset", required_argument, 0, 'p'},
                                         {"complex", no_argument, 0, 'x'}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *to = NULL, *out = NULL, *config = NULL, *preset = NULL;
    int as_complex = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': to = optarg; break;
        case 'o': out = optarg; break;
        case 'c': config = optarg; break;
        case 'p': preset = optarg; break;
        case 'x': as_complex = 1; break;
        case 'h': help(); return 0;
        default: return 2;
        }
    }
    if (optind != argc - 1)
        return cli_errorf("send: give one ISMRMRD file (larmor-cli send FILE.h5 --to HOST:PORT --out OUT)");
    const char *path = argv[optind];
    if (!to || !out)
        return cli_errorf("send: --to HOST:PORT and --out OUT are required");
    if (config && preset)
        return cli_errorf("send: --config and --preset are exclusive (one CONFIG per connection)");
    lm_error err = {0};
    /* Larmor's own reader checks the file first (every size against what is
     * stored) before libismrmrd, which trusts its headers, reads it. */
    lm_mrd check;
    if (lm_mrd_read_opts(path, NULL, &check, &err) != LM_OK)
        return cli_error(&err);
    lm_mrd_clear(&check);
    char *text = NULL;
    if (asprintf(&text, "%s%s", config ? config : "", as_complex ? " --complex" : "") < 0)
        return cli_errorf("send: out of memory");
    ISMRMRD_Dataset d;
    if (ismrmrd_init_dataset(&d, path, "/dataset") != ISMRMRD_NOERROR ||
        ismrmrd_open_dataset(&d, false) != ISMRMRD_NOERROR) {
        free(text);
        return cli_errorf("%s: libismrmrd cannot open it", path);
    }
    const int fd = connect_to(to, &err);
    if (fd < 0) {
        ismrmrd_close_dataset(&d);
        free(text);
        return cli_error(&err);
    }
    signal(SIGPIPE, SIG_IGN);
    inbox in = {.fd = fd};
    pthread_t t;
    if (pthread_create(&t, NULL, receive, &in)) {
        close(fd);
        ismrmrd_close_dataset(&d);
        free(text);
        return cli_errorf("send: cannot start the receiving thread");
    }
    const double t0 = cli_now();
    lm_code rc = stream_file(fd, &d, path, preset ? preset : text, preset != NULL, &err);
    ismrmrd_close_dataset(&d);
    free(text);
    if (rc != LM_OK)
        shutdown(fd, SHUT_WR); /* the server's ERROR, if any, still arrives */
    pthread_join(t, NULL);
    close(fd);
    const double t1 = cli_now();
    int status = 1;
    lm_volume *v = NULL;
    int skipped = 0;
    if (in.error[0]) /* the server's word first: it says why the sending stopped */
        cli_errorf("send: %s: %s", to, in.error);
    else if (rc != LM_OK)
        cli_error(&err);
    else if (!in.closed)
        cli_errorf("send: %s: the server ended without CLOSE", to);
    else if (assemble(&in, &v, &skipped, &err) != LM_OK || cli_write_image(out, v, as_complex, &err) != LM_OK)
        cli_error(&err);
    else {
        printf("sent %s to %s: %zu images in %.3f s; wrote %s (%lldx%lldx%lld)", path, to, in.n, t1 - t0, out,
               (long long)v->dims[0], (long long)v->dims[1], (long long)v->dims[2]);
        if (skipped)
            printf(" from the first repetition and contrast (%d other images not written)", skipped);
        printf("\n");
        status = 0;
    }
    lm_volume_free(v);
    for (size_t i = 0; i < in.n; i++)
        lm_mrd_msg_clear(&in.images[i]);
    free(in.images);
    return status;
}

#endif /* LM_HAVE_ISMRMRD */
