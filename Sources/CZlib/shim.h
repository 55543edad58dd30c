#include <zlib.h>

/// `inflateInit2` is a macro that Swift cannot import.
/// windowBits 15 + 32 reads gzip and zlib alike; -15 reads raw deflate.
static inline int _tollgate_inflate_init(z_stream *stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}
