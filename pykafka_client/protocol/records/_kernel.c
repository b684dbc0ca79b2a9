/* The record fast path: the per-record loops of magic v2 batches, compiled (see docs/ARCHITECTURE.md,
 * "Record fast path").
 *
 * The pure-Python modules of this package are the reference. Every function here either returns exactly
 * what its reference returns, or returns None ("not handled") so that the caller runs the reference,
 * which then produces the result or raises the error. The kernel therefore never builds an error message
 * of its own: on bad or unusual input (truncation, a lying length, a value that does not fit 64 bits, a
 * type it does not know) it declines, and the reference reports it.
 *
 * Safety: every read is bounded by the end of the buffer or of the current record, whichever is
 * smaller; a length from the input is compared with the bytes left before it is used; a count from the
 * input is compared with what the buffer could hold before anything is allocated from it. The GIL is
 * released only in the column and validation scans, which touch no Python object (only the bytes of a
 * buffer exported to us and memory of our own), and by GilHandoff (its epoll wait and its hand-off wait).
 *
 * Layout: one translation unit (the static functions, their inlining and the generated code are those of one
 * file). This file holds the includes and the globals setup() sets, includes the parts in kernel/ (C included into
 * this unit, CPython's ``.c.h`` convention; each opens with what it holds and which earlier parts it uses) in the
 * order below, each definition before its uses, and ends with the module: setup(), the method table and
 * PyInit__kernel. The parts by responsibility:
 *   records:  varint, record_decode, record_validate (the broker's checks), record_encode;
 *   shared:   slot_access (attributes of slotted objects at cached offsets);
 *   producer: producer_batch_encode, producer_pending, producer_binary_column (BinaryColumn, send_batch's keys and
 *             values read in place), producer_pending_columns, producer_partitioner, producer_send_batch,
 *             producer_try_append, producer_handoff (GilHandoff), producer_send_append,
 *             producer_send (SendRecord, SendMethod), producer_request, producer_response, producer_incomplete,
 *             sender_round (the Sender's steady-state round over the accumulator), sender_send_round (the
 *             Sender's whole round of produce data in one call, over sender_round's and producer_request's);
 *   network:  network (per-request objects, a connection's frames), network_memory_pool, client_in_flight (a
 *             client's in-flight requests, InFlightRequests), client_channel_send (a client's send of a request on
 *             its channel, ChannelSend, SendReadiness), client_send_path (a NetworkClient's send-side state with its
 *             ready, poll_delay_ms, new_client_request and send, ClientSendPath), client_poll (a NetworkClient's
 *             poll state with its common poll in one call, ClientPollPath, and a client Selector's, SelectorPoll);
 *   broker:   broker_produce_request, broker_request_times, broker_produce_response, broker_log_index,
 *             broker_log_append (a segment's append state SegmentTail, the producer state's next-batch check),
 *             broker_log_end (a log's end LogEnd: the LEO, the high watermark, a client's common append in one call),
 *             broker_produce_append (a single broker's common Produce request above the log in one call,
 *             ProduceAppender);
 *   producer: producer_batch_open (a new batch's opening in one call, BatchOpener: RecordAccumulator.open_batch),
 *             producer_append_run (send_batch's run of records per batch: its bulk append in one call, ManyAppender:
 *             RecordAccumulator.try_append_many; a call's segments, CallSegments: SendBatchFuture's bookkeeping),
 *             producer_batch_release (the Sender's produce completion state SenderCompletion: a completed batch's
 *             release and acknowledged sequences without Python frames, over producer_response's and
 *             producer_incomplete's);
 *   broker:   server_channel_path (a broker Processor's per-request channel steps, ServerChannelPath, over
 *             client_channel_send's write); broker_response_path (a Processor's common response sent and
 *             completed, ProcessorResponsePath, over server_channel_path).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Set once by setup(): the Record named tuple, the TimestampType members, the reference varint reader. */
static PyObject *record_type = NULL;
static PyObject *create_time = NULL;
static PyObject *log_append_time_type = NULL;
static PyObject *py_read_varint = NULL;

#define MIN_RECORD_SIZE 7
/* Scans on batches at least this large release the GIL. */
#define NOGIL_THRESHOLD 4096

#include "kernel/varint.c.h"
#include "kernel/record_decode.c.h"
#include "kernel/record_validate.c.h"
#include "kernel/record_encode.c.h"
#include "kernel/slot_access.c.h"
#include "kernel/producer_batch_encode.c.h"
#include "kernel/producer_pending.c.h"
#include "kernel/producer_binary_column.c.h"
#include "kernel/producer_pending_columns.c.h"
#include "kernel/producer_partitioner.c.h"
#include "kernel/producer_send_batch.c.h"
#include "kernel/producer_try_append.c.h"
#include "kernel/producer_handoff.c.h"
#include "kernel/producer_send_append.c.h"
#include "kernel/producer_send.c.h"
#include "kernel/producer_request.c.h"
#include "kernel/producer_response.c.h"
#include "kernel/producer_incomplete.c.h"
#include "kernel/sender_round.c.h"
#include "kernel/sender_send_round.c.h"
#include "kernel/network.c.h"
#include "kernel/network_memory_pool.c.h"
#include "kernel/client_in_flight.c.h"
#include "kernel/client_channel_send.c.h"
#include "kernel/broker_produce_request.c.h"
#include "kernel/broker_request_times.c.h"
#include "kernel/broker_produce_response.c.h"
#include "kernel/broker_log_index.c.h"
#include "kernel/broker_log_append.c.h"
#include "kernel/broker_log_end.c.h"
#include "kernel/producer_batch_open.c.h"
#include "kernel/producer_batch_release.c.h"
#include "kernel/broker_produce_append.c.h"
#include "kernel/client_send_path.c.h"
#include "kernel/producer_append_run.c.h"
#include "kernel/client_poll.c.h"
#include "kernel/server_channel_path.c.h"
#include "kernel/broker_response_path.c.h"

/* ---- module ---------------------------------------------------------------------------------------- */

static PyObject *k_setup(PyObject *self, PyObject *args)
{
    PyObject *rt, *ct, *lt, *rv;
    if (!PyArg_ParseTuple(args, "O!OOO", &PyType_Type, &rt, &ct, &lt, &rv))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)rt, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "the record type must be a tuple subclass");
        return NULL;
    }
    Py_INCREF(rt); Py_INCREF(ct); Py_INCREF(lt); Py_INCREF(rv);
    Py_XSETREF(record_type, rt);
    Py_XSETREF(create_time, ct);
    Py_XSETREF(log_append_time_type, lt);
    Py_XSETREF(py_read_varint, rv);
    Py_RETURN_NONE;
}

static PyMethodDef kernel_methods[] = {
    {"setup", k_setup, METH_VARARGS, "setup(Record, CREATE_TIME, LOG_APPEND_TIME, read_varint): the reference's types."},
    {"decode_records", k_decode_records, METH_VARARGS, decode_records_doc},
    {"decode_consumer_records", k_decode_consumer_records, METH_VARARGS, decode_consumer_records_doc},
    {"decode_columns", k_decode_columns, METH_VARARGS, decode_columns_doc},
    {"validate_records", k_validate_records, METH_VARARGS, validate_records_doc},
    {"check_batch", (PyCFunction)(void (*)(void))k_check_batch, METH_FASTCALL, check_batch_doc},
    {"append_records", k_append_records, METH_VARARGS, append_records_doc},
    {"encode_batch", (PyCFunction)(void (*)(void))k_encode_batch, METH_FASTCALL, encode_batch_doc},
    {"read_varint", (PyCFunction)(void (*)(void))k_read_varint, METH_FASTCALL, read_varint_doc},
    {"scan_records", k_scan_records, METH_VARARGS, scan_records_doc},
    {"murmur2", k_murmur2, METH_O, murmur2_doc},
    {"key_partitions", k_key_partitions, METH_VARARGS, key_partitions_doc},
    {"append_pending", (PyCFunction)(void (*)(void))k_append_pending, METH_FASTCALL, append_pending_doc},
    {"producer_setup", k_producer_setup, METH_O, producer_setup_doc},
    {"pending_columns", k_pending_columns, METH_VARARGS, pending_columns_doc},
    {"binary_column", k_binary_column, METH_VARARGS, binary_column_doc},
    {"batch_try_append", (PyCFunction)(void (*)(void))k_batch_try_append, METH_FASTCALL, batch_try_append_doc},
    {"send_append", (PyCFunction)(void (*)(void))k_send_append, METH_FASTCALL, send_append_doc},
    {"sticky_setup", k_sticky_setup, METH_VARARGS, sticky_setup_doc},
    {"sticky_switch", (PyCFunction)(void (*)(void))k_sticky_switch, METH_FASTCALL, sticky_switch_doc},
    {"encode_produce_request", (PyCFunction)(void (*)(void))k_encode_produce_request, METH_FASTCALL,
     encode_produce_request_doc},
    {"decode_produce_response", (PyCFunction)(void (*)(void))k_decode_produce_response, METH_FASTCALL,
     decode_produce_response_doc},
    {"complete_produce_response", (PyCFunction)(void (*)(void))k_complete_produce_response, METH_FASTCALL,
     complete_produce_response_doc},
    {"handle_produce_response", (PyCFunction)(void (*)(void))k_handle_produce_response, METH_FASTCALL,
     handle_produce_response_doc},
    {"sender_setup", k_sender_setup, METH_VARARGS, sender_setup_doc},
    {"produce_request_data", (PyCFunction)(void (*)(void))k_produce_request_data, METH_FASTCALL, produce_request_data_doc},
    {"read_produce_request", (PyCFunction)(void (*)(void))k_read_produce_request, METH_FASTCALL,
     read_produce_request_doc},
    {"frame_buffer", k_frame_buffer, METH_O, frame_buffer_doc},
    {"observe_request_times", (PyCFunction)(void (*)(void))k_observe_request_times, METH_FASTCALL,
     observe_request_times_doc},
    {"produce_results_setup", k_produce_results_setup, METH_O, produce_results_setup_doc},
    {"decode_produce_results", (PyCFunction)(void (*)(void))k_decode_produce_results, METH_FASTCALL,
     decode_produce_results_doc},
    {"encode_produce_response", (PyCFunction)(void (*)(void))k_encode_produce_response, METH_FASTCALL,
     encode_produce_response_doc},
    {"slots_constructor", k_slots_constructor, METH_VARARGS, slots_constructor_doc},
    {"read_slot", (PyCFunction)(void (*)(void))k_read_slot, METH_FASTCALL, read_slot_doc},
    {"client_batch_header", (PyCFunction)(void (*)(void))k_client_batch_header, METH_FASTCALL,
     client_batch_header_doc},
    {"drained_request", (PyCFunction)(void (*)(void))k_drained_request, METH_FASTCALL, drained_request_doc},
    {"tuple_constructor", k_tuple_constructor, METH_VARARGS, tuple_constructor_doc},
    {"read_frames", (PyCFunction)(void (*)(void))k_read_frames, METH_FASTCALL, read_frames_doc},
    {"idempotence_settled", (PyCFunction)(void (*)(void))k_idempotence_settled, METH_FASTCALL,
     idempotence_settled_doc},
    {"produce_results_frame", (PyCFunction)(void (*)(void))k_produce_results_frame, METH_FASTCALL,
     produce_results_frame_doc},
    {"any_transactional", k_any_transactional, METH_O, any_transactional_doc},
    {"index_columns", k_index_columns, METH_VARARGS, index_columns_doc},
    {"release_once", (PyCFunction)(void (*)(void))k_release_once, METH_FASTCALL, release_once_doc},
    {"memory_counter", (PyCFunction)(void (*)(void))k_memory_counter, METH_FASTCALL, memory_counter_doc},
    {"accumulator_ready", (PyCFunction)(void (*)(void))k_accumulator_ready, METH_FASTCALL, accumulator_ready_doc},
    {"accumulator_drain", (PyCFunction)(void (*)(void))k_accumulator_drain, METH_FASTCALL, accumulator_drain_doc},
    {"accumulator_expired", (PyCFunction)(void (*)(void))k_accumulator_expired, METH_FASTCALL, accumulator_expired_doc},
    {"sender_track_in_flight", (PyCFunction)(void (*)(void))k_sender_track_in_flight, METH_FASTCALL,
     sender_track_in_flight_doc},
    {"segment_tail", (PyCFunction)(void (*)(void))k_segment_tail, METH_FASTCALL, segment_tail_doc},
    {"producer_next_entry", (PyCFunction)(void (*)(void))k_producer_next_entry, METH_FASTCALL,
     producer_next_entry_doc},
    {"producer_add_next", (PyCFunction)(void (*)(void))k_producer_add_next, METH_FASTCALL, producer_add_next_doc},
    {"log_end", (PyCFunction)(void (*)(void))k_log_end, METH_FASTCALL, log_end_doc},
    {"sender_send_round", (PyCFunction)(void (*)(void))k_sender_send_round, METH_FASTCALL, sender_send_round_doc},
    {"produce_appender", (PyCFunction)(void (*)(void))k_produce_appender, METH_FASTCALL, produce_appender_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "_kernel", "The compiled record fast path (see records/_native.py).", -1, kernel_methods,
};

PyMODINIT_FUNC PyInit__kernel(void)
{
    if (PyType_Ready(&SendRecordType) < 0 || PyType_Ready(&BoundSendType) < 0 || PyType_Ready(&SendMethodType) < 0 ||
        PyType_Ready(&PendingType) < 0 || PyType_Ready(&BinaryColumnType) < 0)
        return NULL;
#ifdef GIL_HANDOFF
    if (PyType_Ready(&HandoffType) < 0)
        return NULL;
#endif
    PyObject *m = PyModule_Create(&kernel_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&SendRecordType);
    if (PyModule_AddObject(m, "SendRecord", (PyObject *)&SendRecordType) < 0) {
        Py_DECREF(&SendRecordType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SendMethodType);
    if (PyModule_AddObject(m, "SendMethod", (PyObject *)&SendMethodType) < 0) {
        Py_DECREF(&SendMethodType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&PendingType);
    if (PyModule_AddObject(m, "PendingRecords", (PyObject *)&PendingType) < 0) {
        Py_DECREF(&PendingType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&BinaryColumnType);
    if (PyModule_AddObject(m, "BinaryColumn", (PyObject *)&BinaryColumnType) < 0) {
        Py_DECREF(&BinaryColumnType);
        Py_DECREF(m);
        return NULL;
    }
    /* producer_incomplete.c.h's types */
    if (PyType_Ready(&IncompleteType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&IncompleteType);
    if (PyModule_AddObject(m, "IncompleteBatches", (PyObject *)&IncompleteType) < 0) {
        Py_DECREF(&IncompleteType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&AccountType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&AccountType);
    if (PyModule_AddObject(m, "MemoryAccount", (PyObject *)&AccountType) < 0) {
        Py_DECREF(&AccountType);
        Py_DECREF(m);
        return NULL;
    }
    /* client_in_flight.c.h's type */
    if (PyType_Ready(&InFlightType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&InFlightType);
    if (PyModule_AddObject(m, "InFlightRequests", (PyObject *)&InFlightType) < 0) {
        Py_DECREF(&InFlightType);
        Py_DECREF(m);
        return NULL;
    }
    /* broker_log_end.c.h's type */
    if (PyType_Ready(&LogEndType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* client_channel_send.c.h's types */
    if (PyType_Ready(&ChannelSendType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ChannelSendType);
    if (PyModule_AddObject(m, "ChannelSend", (PyObject *)&ChannelSendType) < 0) {
        Py_DECREF(&ChannelSendType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&SendReadinessType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SendReadinessType);
    if (PyModule_AddObject(m, "SendReadiness", (PyObject *)&SendReadinessType) < 0) {
        Py_DECREF(&SendReadinessType);
        Py_DECREF(m);
        return NULL;
    }
    /* broker_produce_append.c.h's type */
    if (PyType_Ready(&ProduceAppenderType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* client_send_path.c.h's type */
    if (PyType_Ready(&ClientSendPathType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ClientSendPathType);
    if (PyModule_AddObject(m, "ClientSendPath", (PyObject *)&ClientSendPathType) < 0) {
        Py_DECREF(&ClientSendPathType);
        Py_DECREF(m);
        return NULL;
    }
#ifdef GIL_HANDOFF
    Py_INCREF(&HandoffType);
    if (PyModule_AddObject(m, "GilHandoff", (PyObject *)&HandoffType) < 0) {
        Py_DECREF(&HandoffType);
        Py_DECREF(m);
        return NULL;
    }
#endif
    /* producer_batch_open.c.h's type */
    if (PyType_Ready(&OpenerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&OpenerType);
    if (PyModule_AddObject(m, "BatchOpener", (PyObject *)&OpenerType) < 0) {
        Py_DECREF(&OpenerType);
        Py_DECREF(m);
        return NULL;
    }
    /* producer_append_run.c.h's types */
    if (PyType_Ready(&CallSegmentsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&CallSegmentsType);
    if (PyModule_AddObject(m, "CallSegments", (PyObject *)&CallSegmentsType) < 0) {
        Py_DECREF(&CallSegmentsType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&ManyAppenderType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ManyAppenderType);
    if (PyModule_AddObject(m, "ManyAppender", (PyObject *)&ManyAppenderType) < 0) {
        Py_DECREF(&ManyAppenderType);
        Py_DECREF(m);
        return NULL;
    }
    /* producer_batch_release.c.h's type */
    if (PyType_Ready(&CompletionType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&CompletionType);
    if (PyModule_AddObject(m, "SenderCompletion", (PyObject *)&CompletionType) < 0) {
        Py_DECREF(&CompletionType);
        Py_DECREF(m);
        return NULL;
    }
    /* sender_send_round.c.h's types */
    if (PyType_Ready(&DrainStampType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&DrainStampType);
    if (PyModule_AddObject(m, "DrainStamp", (PyObject *)&DrainStampType) < 0) {
        Py_DECREF(&DrainStampType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&SenderIterationType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SenderIterationType);
    if (PyModule_AddObject(m, "SenderIteration", (PyObject *)&SenderIterationType) < 0) {
        Py_DECREF(&SenderIterationType);
        Py_DECREF(m);
        return NULL;
    }
    /* client_poll.c.h's types */
    if (PyType_Ready(&ClientPollPathType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ClientPollPathType);
    if (PyModule_AddObject(m, "ClientPollPath", (PyObject *)&ClientPollPathType) < 0) {
        Py_DECREF(&ClientPollPathType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&SelectorPollType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SelectorPollType);
    if (PyModule_AddObject(m, "SelectorPoll", (PyObject *)&SelectorPollType) < 0) {
        Py_DECREF(&SelectorPollType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&ServerChannelPathType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ServerChannelPathType);
    if (PyModule_AddObject(m, "ServerChannelPath", (PyObject *)&ServerChannelPathType) < 0) {
        Py_DECREF(&ServerChannelPathType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&ResponsePathType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ResponsePathType);
    if (PyModule_AddObject(m, "ProcessorResponsePath", (PyObject *)&ResponsePathType) < 0) {
        Py_DECREF(&ResponsePathType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
