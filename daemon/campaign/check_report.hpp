#pragma once
// The text `schedlab campaign check FILE` prints: the campaign's settings, every step of its plan,
// the totals, the next scheduled run and the estimated duration.
#include <chrono>
#include <string>
#include <vector>

#include "daemon/campaign/campaign.hpp"

namespace schedlab {

// "2 h 05 min", "3 min 20 s", "12 s".
std::string format_duration(double seconds);

// `now` is when the next run is computed from (the next elapse strictly after it), in local time.
std::string format_campaign_check(const Campaign& c, const std::vector<CampaignStep>& plan,
                                  const PlanEstimate& estimate, std::chrono::system_clock::time_point now);

}  // namespace schedlab
