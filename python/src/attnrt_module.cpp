// attnrt._attnrt: the C host API (host_api.h) for Python, over nanobind. Tensors are anything
// that speaks DLPack (an object with __dlpack__, or a "dltensor" capsule): the Python side
// (attnrt/_core.py) asks the producer for the capsule on the caller's stream, so this module
// never picks a stream by itself. No framework is imported here.
#include "flex_call.hpp"
#include "host_call.hpp"

#include <attnrt/host_api.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;
using attnrt_python::Backend;
using attnrt_python::Call;
using attnrt_python::call_backend;
using attnrt_python::call_with_workspace;
using attnrt_python::check;
using attnrt_python::dense_backward_args;
using attnrt_python::dense_forward_args;
using attnrt_python::Flex;
using attnrt_python::Message;
using attnrt_python::OptArray;
using attnrt_python::StatusError;

namespace {

// attnrt.Error and one subclass per status (attnrt/_core.py re-exports them).
std::array<PyObject*, 6> g_errors{};

// The Python callable libattnrt's messages go to (attnrt/__init__.py: the `logging` module), or
// null. Owned here; replaced only with the GIL released, since attnrt_set_log_callback waits for
// deliveries in flight, and a delivery on another thread needs the GIL.
nb::object* g_log_target = nullptr;

void deliver_log(void* target, attnrt_log_level level, const char* message) {
  nb::gil_scoped_acquire gil;
  try {
    (*static_cast<nb::object*>(target))(static_cast<int>(level), message);
  } catch (nb::python_error& e) {
    e.discard_as_unraisable("attnrt log callback");
  }
}

void set_log_target(nb::object fn) {
  nb::object* next = fn.is_none() ? nullptr : new nb::object(std::move(fn));
  nb::object* old = g_log_target;
  {
    nb::gil_scoped_release released;
    attnrt_set_log_callback(next ? deliver_log : nullptr, next, ATTNRT_LOG_DEBUG);
  }
  g_log_target = next;
  delete old;
}

struct Runtime {
  attnrt_runtime* rt = nullptr;
  explicit Runtime(std::optional<std::string> config_path, std::vector<std::string> overrides) {
    std::vector<const char*> ptrs;
    for (const auto& o : overrides) ptrs.push_back(o.c_str());
    Message msg;
    check(attnrt_runtime_create(config_path ? config_path->c_str() : nullptr, ptrs.data(), ptrs.size(), &rt, &msg.m),
          msg);
  }
  ~Runtime() { attnrt_runtime_destroy(rt); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  std::vector<std::tuple<std::string, std::string>> sites() const {
    std::vector<std::tuple<std::string, std::string>> out;
    for (size_t i = 0; i < attnrt_runtime_site_count(rt); ++i) {
      out.emplace_back(attnrt_runtime_site_name(rt, i), attnrt_runtime_site_value(rt, i));
    }
    return out;
  }
};

}  // namespace

NB_MODULE(_attnrt, m) {
  m.doc() = "attnrt's C host API (host_api.h) over DLPack tensors; see the attnrt package";

  g_errors[0] = PyErr_NewExceptionWithDoc("attnrt.Error", "An attnrt call failed; .status names the status.",
                                          PyExc_RuntimeError, nullptr);
  struct Sub {
    attnrt_status status;
    const char* name;
    PyObject* extra;
  };
  const Sub subs[] = {{ATTNRT_ERROR_INVALID_ARGUMENT, "attnrt.InvalidArgumentError", PyExc_ValueError},
                      {ATTNRT_ERROR_UNSUPPORTED, "attnrt.UnsupportedError", PyExc_NotImplementedError},
                      {ATTNRT_ERROR_DEVICE, "attnrt.DeviceError", nullptr},
                      {ATTNRT_ERROR_OUT_OF_MEMORY, "attnrt.OutOfMemoryError", PyExc_MemoryError},
                      {ATTNRT_ERROR_INTERNAL, "attnrt.InternalError", nullptr}};
  for (const Sub& s : subs) {
    PyObject* bases = s.extra ? PyTuple_Pack(2, g_errors[0], s.extra) : PyTuple_Pack(1, g_errors[0]);
    g_errors[s.status] = PyErr_NewException(s.name, bases, nullptr);
    Py_DECREF(bases);
  }
  const char* attr[] = {"Error",       "InvalidArgumentError", "UnsupportedError",
                        "DeviceError", "OutOfMemoryError",     "InternalError"};
  for (size_t i = 0; i < g_errors.size(); ++i) m.attr(attr[i]) = nb::borrow(g_errors[i]);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyObject* type = e.status >= 1 && e.status <= 5 ? g_errors[e.status] : g_errors[0];
      PyObject* value = PyObject_CallFunction(type, "s", e.message.c_str());
      if (value) {
        PyObject* status = PyLong_FromLong(static_cast<long>(e.status));
        PyObject_SetAttrString(value, "status", status);
        Py_XDECREF(status);
        PyErr_SetObject(type, value);
        Py_DECREF(value);
      }
    }
  });

  m.def("_set_log_callback", &set_log_target, nb::arg("fn").none(),
        "Send libattnrt's messages to fn(level, message) (level: 0 debug, 1 info, 2 warning, 3 error); None: "
        "drop them");
  m.def("status_string",
        [](int status) { return std::string(attnrt_status_string(static_cast<attnrt_status>(status))); });
  m.attr("ABI_VERSION") = nb::make_tuple(ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR);

  nb::enum_<attnrt_dtype>(m, "DType")
      .value("FP32", ATTNRT_DTYPE_FP32)
      .value("FP16", ATTNRT_DTYPE_FP16)
      .value("BF16", ATTNRT_DTYPE_BF16);

  // plugin_abi.h's attnrt_attention_desc, field for field (device filled by resolve).
  nb::class_<attnrt_attention_desc>(m, "Desc")
      .def("__init__",
           [](attnrt_attention_desc* d) {
             new (d) attnrt_attention_desc{};
             d->struct_size = sizeof(attnrt_attention_desc);
             d->window_left = -1;
             d->window_right = -1;
           })
      .def_rw("dtype", &attnrt_attention_desc::dtype)
      .def_rw("head_dim", &attnrt_attention_desc::head_dim)
      .def_rw("head_dim_v", &attnrt_attention_desc::head_dim_v)
      .def_rw("heads_q", &attnrt_attention_desc::heads_q)
      .def_rw("heads_kv", &attnrt_attention_desc::heads_kv)
      .def_rw("batch", &attnrt_attention_desc::batch)
      .def_rw("seqlen_q", &attnrt_attention_desc::seqlen_q)
      .def_rw("seqlen_k", &attnrt_attention_desc::seqlen_k)
      .def_rw("softmax_scale", &attnrt_attention_desc::softmax_scale)
      .def_rw("causal", &attnrt_attention_desc::causal)
      .def_rw("window_left", &attnrt_attention_desc::window_left)
      .def_rw("window_right", &attnrt_attention_desc::window_right)
      .def_rw("softcap", &attnrt_attention_desc::softcap)
      .def_rw("has_sinks", &attnrt_attention_desc::has_sinks)
      .def_rw("has_alibi", &attnrt_attention_desc::has_alibi)
      .def_rw("is_varlen", &attnrt_attention_desc::is_varlen)
      .def_rw("is_paged", &attnrt_attention_desc::is_paged)
      .def_rw("page_size", &attnrt_attention_desc::page_size)
      .def_rw("dropout_p", &attnrt_attention_desc::dropout_p)
      .def_rw("deterministic", &attnrt_attention_desc::deterministic)
      .def_rw("dropout_seed", &attnrt_attention_desc::dropout_seed)
      .def_rw("dropout_offset", &attnrt_attention_desc::dropout_offset)
      .def_rw("return_lse", &attnrt_attention_desc::return_lse)
      .def_prop_ro("device_type", [](const attnrt_attention_desc& d) { return static_cast<int>(d.device.device_type); })
      .def_prop_ro("device_id", [](const attnrt_attention_desc& d) { return d.device.device_id; })
      .def_prop_ro("cuda_arch", [](const attnrt_attention_desc& d) { return d.cuda_arch; })
      .def(
          "__copy__", [](const attnrt_attention_desc& d) { return d; },
          "A copy, with the device and architecture that resolution bound (copy.copy).");

  attnrt_python::bind_flex(m);

  nb::class_<Runtime>(m, "Runtime")
      .def(nb::init<std::optional<std::string>, std::vector<std::string>>(), nb::arg("config_path").none() = nb::none(),
           nb::arg("overrides") = std::vector<std::string>{})
      .def("sites", &Runtime::sites, "(site, configured value) pairs of the configuration")
      .def(
          "resolve",
          [](Runtime& self, attnrt_attention_desc& desc, std::optional<std::string> value, const std::string& site,
             const Flex* flex) {
            attnrt_backend_handle* h = nullptr;
            Message msg;
            // With a flex block the resolution (the plugins' support queries, which compile the
            // mods) sees it on the chain; desc keeps none afterwards (it would dangle).
            attnrt_attention_desc d = flex ? flex->on(desc) : desc;
            const attnrt_status status =
                attnrt_resolve(self.rt, site.c_str(), value ? value->c_str() : nullptr, &d, &h, &msg.m);
            d.extensions = desc.extensions;
            desc = d;
            check(status, msg);
            return new Backend(h);
          },
          nb::arg("desc"), nb::arg("value").none() = nb::none(), nb::arg("site") = "attn_implementation",
          nb::arg("flex").none() = nb::none(),
          "Resolves value (None: the site's configured one) for desc; fills desc's device. flex: the Flex "
          "block the calls will carry (its mods are compiled now; a mod that does not compile is the "
          "refusal's reason, with the compiler's messages).");

  attnrt_python::bind_context_parallel(m);

  nb::class_<Backend> backend(m, "Backend");
  backend.def_prop_ro("name", &Backend::name)
      .def(
          "context_parallel",
          [](const Backend& self) {
            int32_t size = 1;
            attnrt_ring_layout layout = ATTNRT_RING_ZIGZAG;
            Message msg;
            check(attnrt_backend_context_parallel(self.handle, &size, &layout, &msg.m), msg);
            return std::make_tuple(size, layout);
          },
          "(size, RingLayout) that attnrt.context_parallel asks of this backend's site (size 1: none)")
      .def(
          "workspace_size",
          [](Backend& self, const attnrt_attention_desc& desc, bool backward, int32_t num_threads, const Flex* flex) {
            size_t bytes = 0;
            Message msg;
            const attnrt_attention_desc d = flex ? flex->on(desc) : desc;
            check(attnrt_backend_workspace_size(self.handle, &d, backward ? 1 : 0, num_threads, &bytes, &msg.m), msg);
            return bytes;
          },
          nb::arg("desc"), nb::arg("backward") = false, nb::arg("num_threads") = 0, nb::arg("flex").none() = nb::none())
      .def(
          "forward",
          [](Backend& self, const attnrt_attention_desc& desc, nb::ndarray<> q, nb::ndarray<> k, nb::ndarray<> v,
             nb::ndarray<> out, OptArray lse, OptArray sinks, OptArray alibi_slopes, OptArray cu_seqlens_q,
             OptArray cu_seqlens_k, OptArray seqused_k, OptArray block_table, OptArray workspace, uintptr_t stream,
             int32_t num_threads) {
            Call c;
            attnrt_forward_args a = dense_forward_args(c, q, k, v, out, lse, sinks);
            a.alibi_slopes = c.add(alibi_slopes);
            a.cu_seqlens_q = c.add(cu_seqlens_q);
            a.cu_seqlens_k = c.add(cu_seqlens_k);
            a.seqused_k = c.add(seqused_k);
            a.block_table = c.add(block_table);
            call_backend(self, desc, a, workspace, stream, num_threads, attnrt_backend_forward,
                         attnrt_backend_forward_with_workspace);
          },
          nb::arg("desc"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse").none() = nb::none(),
          nb::arg("sinks").none() = nb::none(), nb::arg("alibi_slopes").none() = nb::none(),
          nb::arg("cu_seqlens_q").none() = nb::none(), nb::arg("cu_seqlens_k").none() = nb::none(),
          nb::arg("seqused_k").none() = nb::none(), nb::arg("block_table").none() = nb::none(),
          nb::arg("workspace").none() = nb::none(), nb::arg("stream") = 0, nb::arg("num_threads") = 0,
          "Forward. workspace: None (attnrt allocates) or a byte tensor of workspace_size + 255 bytes.")
      .def(
          "backward",
          [](Backend& self, const attnrt_attention_desc& desc, nb::ndarray<> dout, nb::ndarray<> q, nb::ndarray<> k,
             nb::ndarray<> v, nb::ndarray<> out, nb::ndarray<> lse, nb::ndarray<> dq, nb::ndarray<> dk,
             nb::ndarray<> dv, OptArray dsinks, OptArray sinks, OptArray alibi_slopes, OptArray cu_seqlens_q,
             OptArray cu_seqlens_k, OptArray seqused_k, OptArray block_table, OptArray workspace, uintptr_t stream,
             int32_t num_threads) {
            Call c;
            attnrt_backward_args a = dense_backward_args(c, dout, q, k, v, out, lse, dq, dk, dv, dsinks, sinks);
            a.alibi_slopes = c.add(alibi_slopes);
            a.cu_seqlens_q = c.add(cu_seqlens_q);
            a.cu_seqlens_k = c.add(cu_seqlens_k);
            a.seqused_k = c.add(seqused_k);
            a.block_table = c.add(block_table);
            call_backend(self, desc, a, workspace, stream, num_threads, attnrt_backend_backward,
                         attnrt_backend_backward_with_workspace);
          },
          nb::arg("desc"), nb::arg("dout"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse"),
          nb::arg("dq"), nb::arg("dk"), nb::arg("dv"), nb::arg("dsinks").none() = nb::none(),
          nb::arg("sinks").none() = nb::none(), nb::arg("alibi_slopes").none() = nb::none(),
          nb::arg("cu_seqlens_q").none() = nb::none(), nb::arg("cu_seqlens_k").none() = nb::none(),
          nb::arg("seqused_k").none() = nb::none(), nb::arg("block_table").none() = nb::none(),
          nb::arg("workspace").none() = nb::none(), nb::arg("stream") = 0, nb::arg("num_threads") = 0)
      .def(
          "forward_with_workspace",
          [](Backend& self, const attnrt_attention_desc& desc, nb::ndarray<> q, nb::ndarray<> k, nb::ndarray<> v,
             nb::ndarray<> out, OptArray lse, OptArray sinks, OptArray workspace, uintptr_t stream,
             int32_t num_threads) {
            Call c;
            const attnrt_forward_args a = dense_forward_args(c, q, k, v, out, lse, sinks);
            call_with_workspace(self, desc, a, workspace, stream, num_threads, attnrt_backend_forward_with_workspace);
          },
          nb::arg("desc"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse").none(),
          nb::arg("sinks").none(), nb::arg("workspace").none(), nb::arg("stream"), nb::arg("num_threads"),
          "forward's dense form for a framework's per-call path (attnrt.torch): every argument given, best "
          "positionally (nanobind parses keywords more slowly), and the caller's workspace always: None when "
          "workspace_size is 0 (a call that needs some then fails with InvalidArgumentError, nothing allocated).")
      .def(
          "backward_with_workspace",
          [](Backend& self, const attnrt_attention_desc& desc, nb::ndarray<> dout, nb::ndarray<> q, nb::ndarray<> k,
             nb::ndarray<> v, nb::ndarray<> out, nb::ndarray<> lse, nb::ndarray<> dq, nb::ndarray<> dk,
             nb::ndarray<> dv, OptArray dsinks, OptArray sinks, OptArray workspace, uintptr_t stream,
             int32_t num_threads) {
            Call c;
            const attnrt_backward_args a = dense_backward_args(c, dout, q, k, v, out, lse, dq, dk, dv, dsinks, sinks);
            call_with_workspace(self, desc, a, workspace, stream, num_threads, attnrt_backend_backward_with_workspace);
          },
          nb::arg("desc"), nb::arg("dout"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse"),
          nb::arg("dq"), nb::arg("dk"), nb::arg("dv"), nb::arg("dsinks").none(), nb::arg("sinks").none(),
          nb::arg("workspace").none(), nb::arg("stream"), nb::arg("num_threads"),
          "backward's dense form, as forward_with_workspace is forward's.")
      .def(
          "append_kv",
          [](Backend& self, const attnrt_attention_desc& desc, nb::ndarray<> k_new, nb::ndarray<> v_new,
             nb::ndarray<> slot_mapping, nb::ndarray<> k_cache, nb::ndarray<> v_cache, uintptr_t stream,
             int32_t num_threads) {
            Call c;
            attnrt_append_kv_args a{};
            a.struct_size = sizeof a;
            a.k_new = c.add(k_new);
            a.v_new = c.add(v_new);
            a.slot_mapping = c.add(slot_mapping);
            a.k_cache = c.add(k_cache);
            a.v_cache = c.add(v_cache);
            call_with_workspace(self, desc, a, std::nullopt, stream, num_threads, attnrt_backend_append_kv);
          },
          nb::arg("desc"), nb::arg("k_new"), nb::arg("v_new"), nb::arg("slot_mapping"), nb::arg("k_cache"),
          nb::arg("v_cache"), nb::arg("stream") = 0, nb::arg("num_threads") = 0,
          "KV-cache append (plugin ABI 1.2): token n of k_new / v_new [tokens, heads_kv, head_dim] goes to slot "
          "slot_mapping[n] (int64: page * page_size + row; negative: skipped) of the paged caches k_cache / v_cache "
          "[pages, page_size, heads_kv, head_dim]; desc is the paged attention descriptor.");

  attnrt_python::bind_flex_calls(backend);
}
