#include <zlib.h>

/// `inflateInit2` is a macro that Swift cannot import.
/// windowBits 15 + 32 reads gzip and zlib alike; -15 reads raw deflate.
static inline int _tollgate_inflate_init(z_stream *stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

/// `deflateInit2` is a macro too. windowBits 15 + 16 writes a gzip stream.
static inline int _tollgate_deflate_init(z_stream *stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}
