/* mpi/xfer.h: the messages between rlpt's MPI roles, and the weight broadcast.
 *
 * Sample batches travel as one byte buffer in a fixed wire format (below),
 * packed field by field in little-endian order whatever the host, so the
 * bytes mean the same on every machine and in a checkpoint. Decoding checks
 * every length against the bytes that remain and a checksum over the whole
 * buffer: a truncated or corrupt buffer is an error, never an out-of-bounds
 * read or a wild allocation.
 *
 * A message of any size is a size message (8 bytes, the payload length) then
 * the payload in chunks of at most XFER_CHUNK_BYTES, all with the same tag.
 * The size message is sent synchronously (MPI_Issend) and both ends wait for it
 * politely (wait.h); once it is matched the receiver is active, so the payload
 * moves with blocking calls at full speed. A send therefore returns only once
 * the receiver has taken the message, like MPI_Ssend: two ranks must never
 * send to each other at the same moment (order such exchanges by rank, or
 * receive first). A receive that fails after the size message (out of memory)
 * leaves the payload pending: treat it as fatal for that peer.
 *
 * Wire format of a sample batch (version XFER_FORMAT_VERSION):
 *   u32 magic "RLPS", u32 version, u64 n_samples, u64 body_bytes,
 *   body: n_samples records, each
 *     i64 prompt_id, i32 group, i32 index, i64 weight_version, i64 step,
 *     u8 finish, u8 arrays (bit 0: logprobs, bit 1: resp_mask, bit 2: token versions), u32 flags,
 *     f64 reward, u32 n_prompt, i32 prompt[n_prompt], u32 n_resp, i32 resp[n_resp],
 *     f32 logprobs[n_resp] (only with bit 0), u8 resp_mask[n_resp] (only with bit 1),
 *     i64 tok_version[n_resp] (only with bit 2),
 *     u32 n_parts, n_parts x {u32 name_len, name bytes (no NUL), f64 value},
 *     u32 n_adv (0, 1 or n_resp), f32 adv[n_adv]
 *   u64 checksum of everything before it. */
#ifndef RLPT_XFER_H
#define RLPT_XFER_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "rl/experience.h"

struct param_table;

#define XFER_MAGIC 0x53504c52u  /* "RLPS" as little-endian bytes */
#define XFER_FORMAT_VERSION 1u
#define XFER_CHUNK_BYTES ((size_t)1 << 30)

/* Message tags, one per kind of traffic, so a rank can probe for the one it wants. */
enum xfer_tag {
  XFER_TAG_CONTROL = 1000, /* controller -> all: step commands (go, stop, checkpoint) */
  XFER_TAG_PROMPTS,        /* controller -> rollout: a prompt batch (samples without responses) */
  XFER_TAG_SAMPLES,        /* rollout -> reward: generated samples */
  XFER_TAG_REWARDS,        /* reward -> train / controller: scored samples */
  XFER_TAG_WEIGHTS,        /* point-to-point weight traffic outside the broadcast */
  XFER_TAG_METRICS,        /* any role -> controller: per-step metric partials */
  XFER_TAG_EVAL,           /* eval prompts and results */
  XFER_TAG_PROGRESS,       /* any role -> controller: stage markers of an RL step (run/progress.h) */
  XFER_TAG_FREE_SAMPLES,   /* free-running separate_async (run/async_free.c): rollout -> reward */
  XFER_TAG_FREE_REWARDS,   /*   reward -> train: scored groups; an empty batch ends the step */
  XFER_TAG_FREE_CREDIT,    /*   train -> rollout: groups consumed; rollout -> train dp 0: cursor */
  XFER_TAG_FREE_WEIGHTS,   /*   train dp 0 -> rollout: version, then the parameters */
  XFER_TAG_COUNT_          /* end marker, not a tag */
};

/* Return codes (XFER_TIMEOUT is wait.h's WAIT_TIMEOUT). A failed MPI call is
 * not returned: it aborts through MPI_CHECK (util/error.h). */
#define XFER_OK 0
#define XFER_TIMEOUT 1        /* the deadline passed; nothing was consumed */
#define XFER_ECORRUPT (-2)    /* bad magic/version/length/checksum; err says which */
#define XFER_ENOMEM (-3)
#define XFER_EMISMATCH (-4)   /* ranks disagree (e.g. parameter count) */

/* "ok", "timeout", ... for messages. */
const char *xfer_strerror(int rc);

/* ---- sample batches as bytes ---------------------------------------------- */

/* Encode the batch into a malloc'd buffer. Returns XFER_OK or XFER_ENOMEM. */
int xfer_encode_batch(const struct sample_batch *b, unsigned char **buf, size_t *len);
/* Decode buf and append its samples to out. On error out is as before and err
 * says what is wrong (XFER_ECORRUPT) or XFER_ENOMEM. */
int xfer_decode_batch(const unsigned char *buf, size_t len, struct sample_batch *out, char *err,
                      size_t errlen);

/* The checksum the format uses (64-bit, not cryptographic): it catches
 * truncation, bit flips and mixed-up buffers. */
uint64_t xfer_checksum(const void *buf, size_t len);

/* ---- point to point ------------------------------------------------------------ */

int xfer_send_bytes(const void *buf, size_t len, int dest, int tag, MPI_Comm comm);
/* The same with a deadline on the receiver's taking the message (timeout_s <= 0: none):
 * XFER_TIMEOUT when it has not started receiving by then (the message is withdrawn). */
int xfer_send_bytes_until(const void *buf, size_t len, int dest, int tag, MPI_Comm comm,
                          double timeout_s);
/* Receive one message from source (or MPI_ANY_SOURCE) into a malloc'd *buf
 * (NULL when len is 0); *from (may be NULL) gets the sender. timeout_s <= 0:
 * wait forever; the deadline covers the wait for the message to start. */
int xfer_recv_bytes(unsigned char **buf, size_t *len, int source, int tag, MPI_Comm comm,
                    double timeout_s, int *from);
int xfer_send_batch(const struct sample_batch *b, int dest, int tag, MPI_Comm comm);
int xfer_send_batch_until(const struct sample_batch *b, int dest, int tag, MPI_Comm comm,
                          double timeout_s);
/* Receive and decode a batch, appending to out. err gets the reason on XFER_ECORRUPT. */
int xfer_recv_batch(struct sample_batch *out, int source, int tag, MPI_Comm comm, double timeout_s,
                    int *from, char *err, size_t errlen);

/* ---- weight broadcast ----------------------------------------------------------- */

struct xfer_stats {
  double t_sync;     /* seconds in the whole call (metric t_sync) */
  double t_wait;     /* of which waiting for every rank to arrive */
  double bytes;      /* parameter bytes moved */
  double sync_gbps;  /* bytes / (t_sync - t_wait) / 1e9 (metric sync_gbps) */
  int chunks;        /* broadcasts issued */
};

/* Collective over comm: every rank ends with root's params. Broadcasts in
 * place, one chunk per layer (a layer's tensors are contiguous in the flat
 * buffer) and one per tensor outside the layers, so no second copy of the
 * model is ever made. Ranks
 * wait for the root politely first. Every rank checks that all ranks have the
 * same table size (XFER_EMISMATCH on all ranks otherwise). st may be NULL. */
int xfer_bcast_weights(float *params, const struct param_table *t, int root, MPI_Comm comm,
                       struct xfer_stats *st);
/* The same with bf16 != 0: each chunk sent as bf16 (round to nearest even, half the bytes)
 * and widened back to fp32 on the receivers, root's params unchanged (st->bytes counts the
 * bf16 bytes); the receivers end with xfer_round_bf16 of root's params. */
int xfer_bcast_weights_as(float *params, const struct param_table *t, int root, MPI_Comm comm, int bf16,
                          struct xfer_stats *st);
/* p[n] = fp32(bf16(p[n])): what a bf16 broadcast delivers. */
void xfer_round_bf16(float *p, size_t n);
/* The same tensor by tensor, for a rank that holds no full copy: with fill non-NULL this rank
 * sends (the root) or receives the bytes through a scratch of one tensor, fill(ctx, i, x)
 * writing full tensor i of t into x first (it may be collective over another group: every
 * rank with fill calls it in table order), and params is unused; without fill a rank
 * receives into params as above. XFER_ENOMEM when the scratch cannot be had (on that rank:
 * treat it as fatal). */
typedef void (*xfer_fill_fn)(void *ctx, int i, float *x);
int xfer_bcast_weights_each(float *params, const struct param_table *t, int root, MPI_Comm comm,
                            xfer_fill_fn fill, void *ctx, struct xfer_stats *st);

#endif
