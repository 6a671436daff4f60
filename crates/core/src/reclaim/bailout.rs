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
    /// The rule `knob` names; "auto" is the era's: 2.6.32 (`v2_6_32`) already had Rik van
    /// Riel's rule (2.6.29; 2.6.32's shrink_zone: `nr_reclaimed > nr_to_reclaim && priority <
    /// DEF_PRIORITY`, and kswapd's goal is ULONG_MAX, so it never bails).
    pub fn resolve(knob: &str, profile: Profile, v2_6_32: bool) -> Bailout {
        match knob {
            "none" => Bailout::None,
            "rvr" => Bailout::Rvr,
            "kosaki" => Bailout::Kosaki,
            "proportional" if profile < Profile::V6 => Bailout::ProportionalFull,
            "proportional" => Bailout::Proportional,
            _ => match profile {
                Profile::V2_6_28 if v2_6_32 => Bailout::Rvr,
                Profile::V2_6_28 => Bailout::None,
                Profile::V3_14 | Profile::V4_14 => Bailout::ProportionalFull,
                Profile::V6 => Bailout::Proportional,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_the_eras_rule() {
        assert_eq!(Bailout::resolve("auto", Profile::V2_6_28, false), Bailout::None, "2.6.28-rc6: none");
        assert_eq!(Bailout::resolve("auto", Profile::V2_6_28, true), Bailout::Rvr, "2.6.32: Rik van Riel's (2.6.29)");
        assert_eq!(Bailout::resolve("none", Profile::V2_6_28, true), Bailout::None, "an explicit knob wins");
        assert_eq!(Bailout::resolve("auto", Profile::V6, false), Bailout::Proportional);
    }
}
