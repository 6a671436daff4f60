//! The direct-reclaim bail-out rule inside `shrink_lruvec` / `shrink_zone` of each era
//! (kernel-algorithms.md §3.8; the variants are what seed 001 compared).

use crate::config::Profile;

/// Direct-reclaim bail-out rule inside `shrink_lruvec` / `shrink_zone` (§3.8, seed 001).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bailout {
    /// 2.6.28-rc6: scan the full `size >> priority` targets.
    None,
    /// Rik van Riel (Nov 2008): stop once more than SWAP_CLUSTER_MAX pages were reclaimed, only
    /// below DEF_PRIORITY and not in kswapd.
    Rvr,
    /// KOSAKI Motohiro: at any priority, and across zones as well (not in kswapd).
    Kosaki,
    /// 3.x-5.x proportional rule: on reaching the goal, stop the smaller type and scan the
    /// adjusted remainder of the larger one in full (`scan_adjusted`).
    ProportionalFull,
    /// 6.x (Johannes Weiner 2022): the same adjustment, then a single nudge and stop.
    Proportional,
}

impl Bailout {
    pub fn resolve(knob: &str, profile: Profile) -> Bailout {
        match knob {
            "none" => Bailout::None,
            "rvr" => Bailout::Rvr,
            "kosaki" => Bailout::Kosaki,
            "proportional" if profile < Profile::V6 => Bailout::ProportionalFull,
            "proportional" => Bailout::Proportional,
            _ => match profile {
                Profile::V2_6_28 => Bailout::None,
                Profile::V3_14 | Profile::V4_14 => Bailout::ProportionalFull,
                Profile::V6 => Bailout::Proportional,
            },
        }
    }
}
