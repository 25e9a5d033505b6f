#include <attnrt_kernels/flex/mods.hpp>
#include <attnrt_kernels/flex/prelude_text.hpp>

#include <dlpack/dlpack.h>

#include <cctype>
#include <string>

namespace attnrt::kernels::flex {
namespace {

const char* element_type(const DLDataType& t) {
  if (t.code == kDLFloat) return "float";
  return t.bits == 64 ? "long long" : "int";
}

std::string text(const char* s) { return s ? s : ""; }

bool blank(const std::string& s) {
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The aux views and scalars under their mod names, at the top of every wrapped function.
std::string bindings(const Mods& m) {
  std::string out;
  for (size_t i = 0; i < m.aux.size(); ++i) {
    const std::string n = std::to_string(i), type = m.aux[i].type, nd = std::to_string(m.aux[i].ndim);
    out += "  const attnrt_flex::View<" + type + ", " + nd + "> aux" + n + " = attnrt_flex::view<" + type + ", " + nd +
           ">(ctx_, " + n + "); (void)aux" + n + ";\n";
  }
  for (int i = 0; i < m.num_scalars; ++i) {
    const std::string n = std::to_string(i);
    out += "  const float scalar" + n + " = ctx_.scalars[" + n + "]; (void)scalar" + n + ";\n";
  }
  return out;
}

// One mod as a function: `params` are its parameters after the context; `fallback` is the
// body used when the mod is absent. A body with no ';' is an expression.
std::string wrap(const Mods& m, const char* ret, const char* name, const std::string& params, const std::string& body,
                 const char* fallback, const std::string& unused) {
  std::string code = std::string("ATTNRT_FLEX_FN ") + ret + " " + name + "(const attnrt_flex::Context& ctx_, " +
                     params + ") {\n" + bindings(m) + "  " + unused + "\n";
  if (blank(body)) return code + "  " + fallback + "\n}\n";
  const bool expression = body.find(';') == std::string::npos;
  code += std::string("#line 1 \"") + name + "\"\n";
  code += expression ? "return (" + body + "\n);" : body;
  return code + "\n}\n";
}

}  // namespace

Mods Mods::from_block(const attnrt_flex_attention& f) {
  Mods m;
  m.score_mod = text(f.score_mod);
  m.mask_mod = text(f.mask_mod);
  m.score_mod_grad = text(f.score_mod_grad);
  m.source_name = text(f.source_name);
  for (int32_t i = 0; i < f.num_aux; ++i) m.aux.push_back({element_type(f.aux[i]->dtype), f.aux[i]->ndim});
  m.num_scalars = f.num_scalars;
  return m;
}

bool Mods::matches(const attnrt_flex_attention* f) const {
  if (f == nullptr) return empty() && score_mod_grad.empty() && source_name.empty() && aux.empty() && num_scalars == 0;
  auto same = [](const std::string& mine, const char* theirs) { return mine == (theirs ? theirs : ""); };
  if (!same(score_mod, f->score_mod) || !same(mask_mod, f->mask_mod) || !same(score_mod_grad, f->score_mod_grad) ||
      !same(source_name, f->source_name) || num_scalars != f->num_scalars ||
      aux.size() != static_cast<size_t>(f->num_aux)) {
    return false;
  }
  for (size_t i = 0; i < aux.size(); ++i) {
    if (aux[i] != AuxSpec{element_type(f->aux[i]->dtype), f->aux[i]->ndim}) return false;
  }
  return true;
}

std::string Mods::identity() const {
  std::string id;
  id.reserve(score_mod.size() + mask_mod.size() + score_mod_grad.size() + source_name.size() + 48 + 8 * aux.size());
  // Each text after its length: a separator alone could occur in the texts, and then two sets of
  // mods split differently (score_mod "a|b" with mask_mod "c", "a" with "b|c") shared an identity.
  for (const std::string* part : {&score_mod, &mask_mod, &score_mod_grad, &source_name}) {
    ((id += std::to_string(part->size())) += ':') += *part;
  }
  for (const AuxSpec& a : aux) ((id += a.type) += char('0' + a.ndim)) += ',';
  return id + '\x1f' + std::to_string(num_scalars);
}

std::string translation_unit(const Mods& m, Target target) {
  std::string tu;
  if (target == Target::kHost) {
    tu += "#include <math.h>\n#include <stdlib.h>\n#include <algorithm>\nusing std::max;\nusing std::min;\n";
    tu += "#define ATTNRT_FLEX_FN inline\n#define ATTNRT_FLEX_CHECKED 1\n";
  } else {
    tu += "#define ATTNRT_FLEX_FN __device__ __forceinline__\n";
  }
  tu += "#line 1 \"attnrt_flex_prelude.h\"\n";
  tu += kPreludeText;
  tu += "\n#line 1 \"attnrt_flex_mods\"\nnamespace attnrt_flex_user {\n";
  const std::string idx = "int b, int h, int q_idx, int kv_idx";
  const std::string unused = "(void)b; (void)h; (void)q_idx; (void)kv_idx;";
  tu += wrap(m, "float", "score_mod", "float score, " + idx, m.score_mod, "return score;", unused + " (void)score;");
  tu += wrap(m, "bool", "mask_mod", idx, m.mask_mod, "return true;", unused);
  tu += wrap(m, "float", "score_mod_grad", "float score, " + idx, m.score_mod_grad, "return 1.0f;",
             unused + " (void)score;");
  tu += "}  // namespace attnrt_flex_user\n";
  if (target == Target::kHost) {
    const std::string args = "(const attnrt_flex::Context* c, float score, " + idx + ")";
    const std::string mask_args = "(const attnrt_flex::Context* c, " + idx + ")";
    tu += "#define ATTNRT_FLEX_EXPORT extern \"C\" __attribute__((visibility(\"default\")))\n";
    tu += std::string("ATTNRT_FLEX_EXPORT float ") + kHostScoreSymbol + args +
          " { return attnrt_flex_user::score_mod(*c, score, b, h, q_idx, kv_idx); }\n";
    tu += std::string("ATTNRT_FLEX_EXPORT int ") + kHostMaskSymbol + mask_args +
          " { return attnrt_flex_user::mask_mod(*c, b, h, q_idx, kv_idx) ? 1 : 0; }\n";
    tu += std::string("ATTNRT_FLEX_EXPORT float ") + kHostGradSymbol + args +
          " { return attnrt_flex_user::score_mod_grad(*c, score, b, h, q_idx, kv_idx); }\n";
  }
  return tu;
}

}  // namespace attnrt::kernels::flex
