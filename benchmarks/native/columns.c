/* A prototype of the reader proposed in docs/benchmarks.md: librdkafka fills Arrow column
 * buffers directly, without a Python object per record. Measurement only, not product code.
 *
 * One handle reads one topic's partitions of one cluster from exact start offsets up to exact
 * end offsets (both given by the caller, as a dynamic_kafka task has them). cols_fill() appends
 * up to max_rows records to caller-owned buffers laid out as Arrow expects (int32 value offsets,
 * value bytes, partition, offset, timestamp) and returns how many it appended, 0 once every
 * partition reached its end, -2 when nothing arrived within the timeout (the caller keeps its
 * own deadline), or -1 on an error (the message is in the handle's errstr).
 *
 * librdkafka's declarations are written out here (the pip wheel ships the library, no header);
 * they are its stable public C API (rdkafka.h, 2.x).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_queue_s rd_kafka_queue_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct {
    int err;
    rd_kafka_topic_t *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *_private;
} rd_kafka_message_t;
typedef struct {
    char *topic;
    int32_t partition;
    int64_t offset;
    void *metadata;
    size_t metadata_size;
    void *opaque;
    int err;
    void *_private;
} rd_kafka_topic_partition_t;
typedef struct rd_kafka_topic_partition_list_s rd_kafka_topic_partition_list_t;

rd_kafka_conf_t *rd_kafka_conf_new(void);
int rd_kafka_conf_set(rd_kafka_conf_t *, const char *, const char *, char *, size_t);
rd_kafka_t *rd_kafka_new(int, rd_kafka_conf_t *, char *, size_t);
int rd_kafka_poll_set_consumer(rd_kafka_t *);
rd_kafka_topic_partition_list_t *rd_kafka_topic_partition_list_new(int);
rd_kafka_topic_partition_t *rd_kafka_topic_partition_list_add(rd_kafka_topic_partition_list_t *,
                                                              const char *, int32_t);
void rd_kafka_topic_partition_list_destroy(rd_kafka_topic_partition_list_t *);
int rd_kafka_assign(rd_kafka_t *, const rd_kafka_topic_partition_list_t *);
rd_kafka_queue_t *rd_kafka_queue_get_consumer(rd_kafka_t *);
void rd_kafka_queue_destroy(rd_kafka_queue_t *);
ssize_t rd_kafka_consume_batch_queue(rd_kafka_queue_t *, int, rd_kafka_message_t **, size_t);
int64_t rd_kafka_message_timestamp(const rd_kafka_message_t *, int *);
void rd_kafka_message_destroy(rd_kafka_message_t *);
int rd_kafka_consumer_close(rd_kafka_t *);
void rd_kafka_destroy(rd_kafka_t *);
const char *rd_kafka_err2str(int);

#define RD_KAFKA_CONSUMER 1
#define ERR_PARTITION_EOF (-191)
#define MAX_PARTITIONS 4096
#define CHUNK 4096

typedef struct {
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue;
    int64_t end[MAX_PARTITIONS];  /* exclusive end offset, -1 when not read */
    int64_t next[MAX_PARTITIONS];
    int open;                     /* partitions not at their end yet */
    rd_kafka_message_t *pending[CHUNK];
    ssize_t npending, ipending;
    char errstr[512];
} cols_handle;

/* conf: "key=value\n" lines, applied in order. */
void *cols_open(const char *conf, const char *topic, int n, const int32_t *partitions,
                const int64_t *starts, const int64_t *ends, char *err, size_t errlen) {
    cols_handle *h = calloc(1, sizeof(cols_handle));
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char *copy = strdup(conf), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        if (rd_kafka_conf_set(c, line, eq + 1, err, errlen) != 0) {
            free(copy);
            free(h);
            return NULL;
        }
    }
    free(copy);
    h->rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, errlen);
    if (!h->rk) {
        free(h);
        return NULL;
    }
    rd_kafka_poll_set_consumer(h->rk);
    for (int p = 0; p < MAX_PARTITIONS; p++) h->end[p] = -1;
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n; i++) {
        if (partitions[i] < 0 || partitions[i] >= MAX_PARTITIONS) continue;
        h->end[partitions[i]] = ends[i];
        h->next[partitions[i]] = starts[i];
        if (starts[i] < ends[i]) {
            h->open++;
            rd_kafka_topic_partition_list_add(list, topic, partitions[i])->offset = starts[i];
        }
    }
    rd_kafka_assign(h->rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    h->queue = rd_kafka_queue_get_consumer(h->rk);
    return h;
}

const char *cols_error(void *handle) { return ((cols_handle *)handle)->errstr; }

/* Append up to max_rows records. value_offsets has max_rows + 1 slots, value_offsets[0] set by
 * the caller (0); values has value_capacity bytes. Returns rows appended, 0 when done, -2 on
 * timeout, -1 on error. A record that does not fit in values stays for the next call. */
int64_t cols_fill(void *handle, int64_t max_rows, int32_t *value_offsets, uint8_t *values,
                  int64_t value_capacity, int32_t *partition, int64_t *offset, int64_t *timestamp,
                  int timeout_ms) {
    cols_handle *h = handle;
    int64_t rows = 0;
    int32_t used = value_offsets[0];
    while (rows < max_rows && h->open > 0) {
        if (h->ipending == h->npending) {
            h->npending = rd_kafka_consume_batch_queue(h->queue, timeout_ms,
                                                       h->pending, CHUNK);
            h->ipending = 0;
            if (h->npending < 0) {
                snprintf(h->errstr, sizeof h->errstr, "consume_batch_queue failed");
                h->npending = 0;
                return -1;
            }
            if (h->npending == 0) return rows ? rows : -2; /* nothing within timeout_ms */
        }
        rd_kafka_message_t *m = h->pending[h->ipending];
        int32_t p = m->partition;
        if (m->err) {
            if (m->err != ERR_PARTITION_EOF) {
                snprintf(h->errstr, sizeof h->errstr, "%s", rd_kafka_err2str(m->err));
                return -1;
            }
        } else if (p >= 0 && p < MAX_PARTITIONS && m->offset < h->end[p] &&
                   m->offset >= h->next[p]) {
            if (used + (int64_t)m->len > value_capacity) break; /* full: keep it for next call */
            memcpy(values + used, m->payload, m->len);
            used += (int32_t)m->len;
            value_offsets[rows + 1] = used;
            partition[rows] = p;
            offset[rows] = m->offset;
            timestamp[rows] = rd_kafka_message_timestamp(m, NULL) * 1000; /* ms -> us */
            rows++;
            h->next[p] = m->offset + 1;
            if (h->next[p] >= h->end[p]) h->open--;
        }
        rd_kafka_message_destroy(m);
        h->ipending++;
    }
    return rows;
}

void cols_close(void *handle) {
    cols_handle *h = handle;
    while (h->ipending < h->npending) rd_kafka_message_destroy(h->pending[h->ipending++]);
    rd_kafka_queue_destroy(h->queue);
    rd_kafka_consumer_close(h->rk);
    rd_kafka_destroy(h->rk);
    free(h);
}
