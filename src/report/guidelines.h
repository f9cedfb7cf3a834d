// The five collocation guidelines of the paper (Robroek et al., EuroMLSys
// '24, section 3.4), each checked against one experiment's measurements: a
// verdict and the numbers it rests on. Pure functions over ExperimentMetrics.
//
// Thresholds (stated in each finding's evidence so a reader can judge them):
// a collocated case "helps" when its steady throughput is at least 1.5x one job
// alone (1.1x for "partly"); a job "saturates" the GPU when its mean SM activity
// alone is at least 80%; the memory of N collocated jobs is "the sum" when it is
// within 25% of N times one job alone; MPS "wins" when its throughput is within
// 5% of the best mechanism's or above.
#pragma once

#include <string>
#include <vector>

#include "report/case_metrics.h"

namespace colo {

enum class Verdict { kSupported, kPartlySupported, kNotSupported, kNotEnoughData };

// "supported", "partly supported", "not supported", "not enough data".
std::string to_string(Verdict verdict);

struct GuidelineFinding {
  int number = 0;         // 1..5, in the paper's order
  std::string guideline;  // the guideline in a sentence
  Verdict verdict = Verdict::kNotEnoughData;
  std::vector<std::string> evidence;  // one line per number or comparison
};

// All five, in order. Cases that did not run count only where they are the
// evidence (e.g. "does not fit" for the memory guideline).
std::vector<GuidelineFinding> evaluate_guidelines(const ExperimentMetrics& metrics);

// "Guideline 1: ...\n  verdict: supported\n  - evidence\n..." for summary.txt.
std::string format_guidelines(const std::vector<GuidelineFinding>& findings);

}  // namespace colo
