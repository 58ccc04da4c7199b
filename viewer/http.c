/* SPDX-License-Identifier: Apache-2.0 */
/* http.c - the HTTP side of `voxlod view`: civetweb's set-up, the one page, who may connect.
 *
 * Served: GET (or HEAD) "/" and "/index.html": the page, embedded in the binary at build time
 * (viewer/page/index.html); "/ws": the websocket (session.c). Every other path is 404, every
 * other method 405; civetweb has no document root, so nothing is ever read from disk.
 *
 * Who may connect:
 *  - With a token (any non-loopback --host, or --token): every request, page and websocket,
 *    must carry ?token=<the 32 hex digits printed with the URL>, compared in constant time.
 *  - Without one (loopback): the Host header must name the loopback (localhost, 127.0.0.1,
 *    [::1]; any port, for SSH forwards), so that a web site whose name is made to resolve to
 *    127.0.0.1 (DNS rebinding) cannot read the page.
 *  - Always: a request that carries an Origin (browsers send one with every websocket) must come
 *    from the page itself (Origin = http(s)://<Host>), so that no other web site a user visits can
 *    open the stream; websockets are not covered by the browser's same-origin rules.
 * The page is sent with headers that keep it from being framed, cached or sniffed, and a
 * content security policy that allows nothing from outside.
 */
#define _POSIX_C_SOURCE 200809L
#include "viewer/protocol.h"
#include "viewer/server.h"

#include <civetweb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The page (generated from viewer/page/index.html by viewer/embed.cmake). */
extern const unsigned char vw_page_html[];
extern const size_t vw_page_html_size;

/* Compares two strings in time that depends on their lengths only. */
static int same_secret(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  unsigned char d = (unsigned char)(na != nb);
  for (size_t i = 0; i < na && i < nb; i++) d |= (unsigned char)(a[i] ^ b[i]);
  return d == 0;
}

int vw_http_allowed(const vw_server *s, const struct mg_connection *c) {
  const struct mg_request_info *ri = mg_get_request_info(c);
  if (!ri) return 0;
  const char *host = mg_get_header(c, "Host");
  if (s->token[0]) {
    char got[80];
    const char *q = ri->query_string;
    if (!q || mg_get_var(q, strlen(q), "token", got, sizeof got) <= 0) return 0;
    if (!same_secret(got, s->token)) return 0;
  } else {
    char name[256];
    if (!host || vw_host_parse(host, name, sizeof name) || !vw_host_is_loopback(name)) return 0;
  }
  const char *origin = mg_get_header(c, "Origin");
  if (origin) {
    /* https: the page reached through a TLS proxy that keeps the Host header. */
    size_t skip = strncasecmp(origin, "http://", 7) == 0    ? 7
                  : strncasecmp(origin, "https://", 8) == 0 ? 8
                                                            : 0;
    if (!host || !skip || strcasecmp(origin + skip, host) != 0) return 0;
  }
  return 1;
}

/* ---- the page ------------------------------------------------------------------------------- */

static int send_page(struct mg_connection *c, int head) {
  char len[32];
  snprintf(len, sizeof len, "%zu", vw_page_html_size);
  mg_response_header_start(c, 200);
  mg_response_header_add(c, "Content-Type", "text/html; charset=utf-8", -1);
  mg_response_header_add(c, "Content-Length", len, -1);
  mg_response_header_add(c, "Cache-Control", "no-store", -1);
  mg_response_header_add(c, "X-Content-Type-Options", "nosniff", -1);
  mg_response_header_add(c, "X-Frame-Options", "DENY", -1);
  mg_response_header_add(c, "Referrer-Policy", "no-referrer", -1);
  mg_response_header_add(c, "Content-Security-Policy",
                         "default-src 'none'; script-src 'unsafe-inline'; "
                         "style-src 'unsafe-inline'; img-src blob: data:; "
                         "connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; "
                         "form-action 'none'",
                         -1);
  mg_response_header_send(c);
  if (!head) mg_write(c, vw_page_html, vw_page_html_size);
  return 200;
}

/* Every HTTP request that is not a websocket upgrade of /ws lands here. */
static int on_request(struct mg_connection *c, void *user) {
  vw_server *s = (vw_server *)user;
  const struct mg_request_info *ri = mg_get_request_info(c);
  const char *path = ri && ri->local_uri ? ri->local_uri : "";
  int is_page = strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0;
  if (!is_page) {
    mg_send_http_error(c, 404, "%s", "Not found\n");
    return 404;
  }
  int head = ri->request_method && strcmp(ri->request_method, "HEAD") == 0;
  if (!vw_http_allowed(s, c)) {
    mg_send_http_error(c, 403, "%s",
                       s->token[0] ? "This server needs the token printed with its URL.\n"
                                   : "This server answers to localhost and 127.x.x.x only.\n");
    return 403;
  }
  return send_page(c, head);
}

/* Every request, once its head has arrived, before any handler: the connection no longer waits
 * (conns.c), and only GET and HEAD go on, whatever the path (the websocket's included). */
static int on_begin(struct mg_connection *c) {
  const struct mg_request_info *ri = mg_get_request_info(c);
  vw_server *s = ri ? (vw_server *)ri->user_data : NULL;
  if (s) vw_conns_request(s->conns, c);
  const char *m = ri ? ri->request_method : NULL;
  if (!m || (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0)) {
    /* Written by hand: civetweb's header functions refuse a request that asked for an upgrade. */
    static const char reply[] = "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n"
                                "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 18\r\n"
                                "Connection: close\r\n\r\nOnly GET and HEAD\n";
    mg_write(c, reply, sizeof reply - 1);
    return 405;
  }
  return 0;
}

static int on_init_connection(const struct mg_connection *c, void **data) {
  vw_server *s = (vw_server *)mg_get_user_data(mg_get_context(c));
  *data = NULL;
  if (s) vw_conns_opened(s->conns, c);
  return 0;
}

static void on_connection_close(const struct mg_connection *c) {
  vw_server *s = (vw_server *)mg_get_user_data(mg_get_context(c));
  if (s) vw_conns_closing(s->conns, c);
}

static void on_connection_closed(const struct mg_connection *c) {
  vw_server *s = (vw_server *)mg_get_user_data(mg_get_context(c));
  if (s) vw_conns_closed(s->conns, c);
}

/* civetweb's own messages: shown with --verbose only (a client's bad request is not news). */
static int on_log(const struct mg_connection *c, const char *message) {
  const struct mg_request_info *ri = c ? mg_get_request_info(c) : NULL;
  vw_server *s = ri ? (vw_server *)ri->user_data : NULL;
  if (s && s->opt.verbose) { /* it may quote what a client sent */
    char shown[512];
    fprintf(stderr, "voxlod view: civetweb: %s\n", vw_text_escape(shown, sizeof shown, message));
  }
  return 1;
}

int vw_http_start(vw_server *s, char *why, size_t why_n) {
  char ports[96], threads[16], timeout[24], reqmax[16];
  snprintf(ports, sizeof ports, "%s:%u", s->opt.host, s->opt.port);
  /* One worker per open tab, one per connection still sending its request (conns.c keeps them
   * to VW_WAIT_MAX), a few for page loads and refusals: never all taken. */
  unsigned workers = s->opt.max_tabs + VW_WAIT_MAX + VW_SPARE_WORKERS;
  snprintf(threads, sizeof threads, "%u", workers);
  snprintf(reqmax, sizeof reqmax, "%d", VW_REQUEST_MAX);
  if (!s->conns) s->conns = vw_conns_new(workers, s->opt.max_tabs, s->opt.verbose);
  if (!s->conns) {
    snprintf(why, why_n, "out of memory");
    return -1;
  }
  snprintf(timeout, sizeof timeout, "%.0f", s->opt.timeout_s * 1000.0);
  const char *options[] = {"listening_ports", ports,
                           "num_threads", threads,
                           "request_timeout_ms", timeout,
                           /* An idle tab is pinged (browsers answer by themselves); a ping that
                            * cannot be written ends a peer that stopped reading. */
                           "websocket_timeout_ms", "5000",
                           "enable_websocket_ping_pong", "yes",
                           "enable_directory_listing", "no",
                           "enable_keep_alive", "no",
                           "max_request_size", reqmax,
                           "tcp_nodelay", "1",
                           NULL};
  struct mg_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.log_message = on_log;
  cb.begin_request = on_begin;
  cb.init_connection = on_init_connection;
  cb.connection_close = on_connection_close;
  cb.connection_closed = on_connection_closed;
  struct mg_init_data init;
  memset(&init, 0, sizeof init);
  init.callbacks = &cb;
  init.user_data = s;
  init.configuration_options = options;
  char text[256] = "";
  unsigned code = 0;
  struct mg_error_data ed;
  memset(&ed, 0, sizeof ed);
  ed.code = &code;
  ed.text = text;
  ed.text_buffer_size = sizeof text;
  mg_init_library(0);
  s->ctx = mg_start2(&init, &ed);
  if (!s->ctx) {
    snprintf(why, why_n, "cannot listen on %s: %s (is the port taken, or the address not one of "
             "this machine's?)", ports, text[0] ? text : "civetweb failed");
    mg_exit_library();
    return -1;
  }
  mg_set_request_handler(s->ctx, "/", on_request, s);
  mg_set_websocket_handler(s->ctx, "/ws", vw_ws_connect, vw_ws_ready, vw_ws_data, vw_ws_close, s);
  struct mg_server_port sp[4];
  memset(sp, 0, sizeof sp);
  int np = mg_get_server_ports(s->ctx, 4, sp);
  s->port = np > 0 ? sp[0].port : (int)s->opt.port;
  if (vw_conns_start(s->conns, s->port) != 0) {
    snprintf(why, why_n, "cannot start a thread");
    vw_http_stop(s);
    return -1;
  }
  /* The address listened on (127.0.0.2 is not 127.0.0.1); 0.0.0.0: the user knows the name. */
  const char *shown = strcmp(s->opt.host, "0.0.0.0") == 0 ? "HOST" : s->opt.host;
  snprintf(s->url, sizeof s->url, "http://%s:%d/%s%s", shown, s->port,
           s->token[0] ? "?token=" : "", s->token);
  return 0;
}

void vw_http_stop(vw_server *s) {
  vw_conns_stop(s->conns); /* no connection is shut down while civetweb closes them */
  if (s->ctx) {
    mg_stop(s->ctx);
    s->ctx = NULL;
    mg_exit_library();
  }
}
