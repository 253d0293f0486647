// The AOTI package run from C++, as a deployment without Python runs it: torch::inductor::AOTIModelPackageLoader.
// Built once per run against the installed torch (compat/child/cpp.py); the Python side saves the inputs, compares
// the outputs with eager, and reads the report.
//
// usage: aoti_runner PACKAGE INPUTS OUTPUTS REPORT DEVICE WARMUP REPS LOCK
//   INPUTS   torch.save of a list (one per check point) of lists of CPU tensors: the model's flat inputs
//   OUTPUTS  written with torch::jit::pickle_save: a list (one per check point) of lists of CPU tensors
//   REPORT   JSON: the phase reached, the error if any, first-call and steady-state latency (REPS 0: none)
//   DEVICE   "cuda" or "cpu": where the inputs go (the package itself says where it runs)
//   LOCK     a file flock()ed while timing the steady state (the run's timing lock of this GPU), or "" for none
// Exit codes: 0 ran; 3 the package did not load; 4 it did not run; 2 bad usage or unreadable inputs (the harness's).

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Tensors = std::vector<at::Tensor>;

std::string json_string(const std::string& s) {
  std::ostringstream out;
  out << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out << buf;
    } else {
      out << c;
    }
  }
  out << '"';
  return out.str();
}

struct Report {
  std::string phase = "read_inputs";
  std::string error_type, error;
  double load_ms = -1, first_call_ms = -1;
  std::vector<double> steady_us, steady_best_us;  // per check point: the median and the best of REPS timed calls
  std::string clock;

  void write(const std::string& path) const {
    std::ofstream out(path);
    out << "{\"phase\": " << json_string(phase) << ", \"clock\": " << json_string(clock);
    if (!error.empty()) {
      out << ", \"error_type\": " << json_string(error_type) << ", \"error\": " << json_string(error);
    }
    out << ", \"load_ms\": " << load_ms << ", \"first_call_ms\": " << first_call_ms << ", \"steady_us\": [";
    for (size_t i = 0; i < steady_us.size(); ++i) out << (i ? ", " : "") << steady_us[i];
    out << "], \"steady_best_us\": [";
    for (size_t i = 0; i < steady_best_us.size(); ++i) out << (i ? ", " : "") << steady_best_us[i];
    out << "]}\n";
  }
};

// Waits for the device's queued work: a CUDA time is only over once the kernels are.
struct Device {
  c10::Device device;
  bool cuda() const { return device.is_cuda(); }

  void sync() const {
    if (!cuda()) return;
    c10::Event done(device.type(), c10::EventFlag::PYTORCH_DEFAULT);
    done.record(current_stream());
    done.synchronize();
  }

  c10::Stream current_stream() const {
    return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
  }
};

// The run's timing lock, shared with the Python side's (filelock uses flock too); held for its lifetime.
struct Locked {
  int fd = -1;
  explicit Locked(const std::string& path) {
    if (path.empty()) return;
    fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd >= 0) flock(fd, LOCK_EX);
  }
  ~Locked() {
    if (fd >= 0) close(fd);  // closing releases the lock
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Steady state: WARMUP calls, then REPS calls each timed on its own (CUDA events on a GPU, the clock on a CPU); their
// median and their best.
std::pair<double, double> steady_us(torch::inductor::AOTIModelPackageLoader& loader, const Tensors& inputs,
                                    const Device& dev, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) loader.run(inputs);
  dev.sync();
  std::vector<double> times;
  if (dev.cuda()) {
    std::vector<std::pair<c10::Event, c10::Event>> events;
    for (int i = 0; i < reps; ++i) {
      events.emplace_back(c10::Event(dev.device.type(), c10::EventFlag::BACKEND_DEFAULT),
                          c10::Event(dev.device.type(), c10::EventFlag::BACKEND_DEFAULT));
      events.back().first.record(dev.current_stream());
      loader.run(inputs);
      events.back().second.record(dev.current_stream());
    }
    dev.sync();
    for (auto& [start, end] : events) times.push_back(start.elapsedTime(end) * 1000.0);
  } else {
    for (int i = 0; i < reps; ++i) {
      auto start = Clock::now();
      loader.run(inputs);
      times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
  }
  return {median(times), *std::min_element(times.begin(), times.end())};
}

std::vector<Tensors> read_inputs(const std::string& path, const c10::Device& device) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Tensors> points;
  for (const auto& point : torch::jit::pickle_load(bytes).toList()) {
    Tensors tensors;
    for (const auto& t : point.get().toList()) tensors.push_back(t.get().toTensor().to(device));
    points.push_back(std::move(tensors));
  }
  return points;
}

void write_outputs(const std::string& path, const std::vector<Tensors>& outputs) {
  c10::impl::GenericList points(c10::AnyType::get());
  for (const auto& out : outputs) {
    c10::impl::GenericList tensors(c10::TensorType::get());
    for (const auto& t : out) tensors.push_back(t);
    points.push_back(tensors);
  }
  auto bytes = torch::jit::pickle_save(points);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The exception's C++ type as source code spells it (std::runtime_error), not as the ABI mangles it.
std::string type_of(const std::exception& e) {
  if (dynamic_cast<const c10::Error*>(&e)) return "c10::Error";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status),
                                              std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
}

// A c10::Error's message without the C++ backtrace torch appends (it differs by build, and is no fragment).
std::string message_of(const std::exception& e) {
  auto error = dynamic_cast<const c10::Error*>(&e);
  return error ? error->what_without_backtrace() : e.what();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr, "usage: %s PACKAGE INPUTS OUTPUTS REPORT DEVICE WARMUP REPS LOCK\n", argv[0]);
    return 2;
  }
  const std::string package = argv[1], inputs_path = argv[2], outputs_path = argv[3], report_path = argv[4];
  const int warmup = std::stoi(argv[6]), reps = std::stoi(argv[7]);
  const std::string lock = argv[8];
  Report report;
  Device dev{c10::Device(std::string(argv[5]))};
  report.clock = dev.cuda() ? "cuda_event" : "steady_clock";
  std::vector<Tensors> inputs;
  try {
    inputs = read_inputs(inputs_path, dev.device);
    dev.sync();
  } catch (const std::exception& e) {
    report.error_type = type_of(e);
    report.error = message_of(e);
    report.write(report_path);
    return 2;
  }
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader;
  std::vector<Tensors> outputs;
  try {
    report.phase = "load";
    auto start = Clock::now();
    loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(package);
    report.load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    report.phase = "run";
    for (const auto& point : inputs) {
      Tensors out;
      for (const auto& t : loader->run(point)) out.push_back(t.to(c10::kCPU));  // to the host: waits for it
      if (outputs.empty()) {
        report.first_call_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      }
      outputs.push_back(std::move(out));
    }
    write_outputs(outputs_path, outputs);
    report.phase = "steady_state";
    if (reps > 0) {
      Locked quiet(lock);
      for (const auto& point : inputs) {
        auto [med, best] = steady_us(*loader, point, dev, warmup, reps);
        report.steady_us.push_back(med);
        report.steady_best_us.push_back(best);
      }
    }
    report.phase = "done";
  } catch (const std::exception& e) {
    report.error_type = type_of(e);
    report.error = message_of(e);
    report.write(report_path);
    return report.phase == "load" ? 3 : 4;
  }
  report.write(report_path);
  return 0;
}
