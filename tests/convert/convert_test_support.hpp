// What the convert layer's tests share.
#pragma once

#include <string>

#include "agld/convert.hpp"

namespace agld::test {

// Converts one input file to out with opt (its inputs and output set here); the report goes
// to *report if given.
inline Status convert_one(const std::string& in, const std::string& out, ConvertOptions opt = {},
                          ConvertReport* report = nullptr) {
  opt.inputs = {in};
  opt.output = out;
  ConvertReport rep;
  return convert(opt, report ? report : &rep);
}

}  // namespace agld::test
