#include "kernels/boot_backend.hpp"

#include <sstream>

#include "core/cmdline_word.hpp"
#include "core/error.hpp"
#include "kernels/lab_backends.hpp"

namespace schedlab::kernels {

QemuTopology parse_topology(const std::string& text) {
  QemuTopology t;
  bool seen[3] = {false, false, false};
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    auto eq = part.find('=');
    const std::string key = part.substr(0, eq);
    int* field = key == "sockets"   ? &t.sockets
                 : key == "cores"   ? &t.cores
                 : key == "threads" ? &t.threads
                                    : nullptr;
    int idx = key == "sockets" ? 0 : key == "cores" ? 1 : 2;
    int value = 0;
    try {
      std::size_t used = 0;
      value = eq == std::string::npos ? 0 : std::stoi(part.substr(eq + 1), &used);
      if (eq != std::string::npos && used != part.size() - eq - 1) value = 0;
    } catch (const std::exception&) {
      value = 0;
    }
    if (!field || value < 1 || seen[idx])
      throw InputError("--topology " + text +
                       ": expected sockets=N,cores=N,threads=N (each at least 1, once)");
    *field = value;
    seen[idx] = true;
  }
  if (!seen[0] && !seen[1] && !seen[2])
    throw InputError("--topology " + text + ": expected sockets=N,cores=N,threads=N (each at least 1, once)");
  return t;
}

std::string identity_args(const Recipe& recipe) {
  return "schedlab.recipe=" + recipe.name + " schedlab.label=" + recipe.label;
}

std::string identity_args(const Recipe& recipe, const KernelArtifacts& kernel) {
  std::string out = identity_args(recipe);
  for (const auto& [name, value] : kernel.identity)
    out += " schedlab." + name + "=" + encode_cmdline_word(value);
  return out;
}

std::unique_ptr<BootBackend> make_kexec_backend() {
  return make_kexec_backend(LabEnvironment{});
}
std::unique_ptr<BootBackend> make_grub_backend() {
  return make_grub_backend(LabEnvironment{});
}

std::unique_ptr<BootBackend> make_backend(const std::string& name) {
  if (name == "qemu") return make_qemu_backend();
  if (name == "kexec") return make_kexec_backend();
  if (name == "grub") return make_grub_backend();
  throw InputError("--backend " + name + ": unknown (known: qemu, kexec, grub)");
}

}  // namespace schedlab::kernels
