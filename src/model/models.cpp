// The table of models. Adding one: its factory's declaration and one line below.
#include "common/registry.hpp"
#include "model/model.hpp"

namespace agld::model {

std::unique_ptr<Model> make_logistic(const SampleOptions& options);
std::unique_ptr<Model> make_linear(const SampleOptions& options);

namespace {
constexpr ModelInfo kModels[] = {
    {"logistic", "binary labels +1/-1, l = log(1 + exp(-y m))", make_logistic},
    {"linear", "real labels, y ~ N(m, --noise-var), l = (y - m)^2 / (2 noise_var)", make_linear},
};
}  // namespace

std::span<const ModelInfo> registered_models() { return kModels; }

const ModelInfo* find_model(std::string_view name) { return find_by_name<ModelInfo>(kModels, name); }

}  // namespace agld::model
