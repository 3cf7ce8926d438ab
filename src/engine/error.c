/* error.c -- error names and the message-buffer helper. */
#include <stdarg.h>
#include <stdio.h>

#include "histd/histd.h"

const char *histd_strerror(int err) {
  switch (err) {
  case HISTD_OK: return "OK";
  case HISTD_EINVAL: return "EINVAL";
  case HISTD_ENOMEM: return "ENOMEM";
  case HISTD_EIO: return "EIO";
  case HISTD_ENOENT: return "ENOENT";
  case HISTD_ENODEV: return "ENODEV";
  case HISTD_ECANCELED: return "ECANCELED";
  case HISTD_EPARSE: return "EPARSE";
  case HISTD_EDEVICE: return "EDEVICE";
  case HISTD_ETOOBIG: return "ETOOBIG";
  case HISTD_EGPULOST: return "EGPULOST";
  default: return "EUNKNOWN";
  }
}

int histd_fail(char *msg, size_t msglen, int err, const char *fmt, ...) {
  if (msg != NULL && msglen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
  }
  return err;
}
