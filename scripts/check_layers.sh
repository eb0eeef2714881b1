#!/usr/bin/env bash
# Checks that the modules of src/ depend on each other in one direction: no import cycle among
# the crate's top-level modules (src/<m>.rs with its folder src/<m>/). A module depends on
# another where its code (not comments, not its tests) names `crate::<other>`; its own
# submodules' `super::` paths stay inside it. Prints the layers, or each cycle and exits 1.
#
#   scripts/check_layers.sh        (scripts/test.sh runs it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../src"

modules=()
for f in *.rs; do
    [[ "$f" == lib.rs ]] || modules+=("${f%.rs}")
done

declare -A deps
for m in "${modules[@]}"; do
    files=("$m.rs")
    if [[ -d "$m" ]]; then
        while IFS= read -r f; do files+=("$f"); done < <(find "$m" -name '*.rs' ! -name tests.rs | sort)
    fi
    # Code before the file's `#[cfg(test)]` module, without comments, then its crate:: paths.
    code="$(for f in "${files[@]}"; do
        awk '/^#\[cfg\(test\)\]/ { exit } { sub(/\/\/.*/, ""); print FILENAME ":" FNR ": " $0 }' "$f"
    done)"
    # A path through the crate root's re-exports would hide which module is used.
    if grep -E 'crate::([A-Z{]|\*)' <<<"$code" >&2; then
        echo "check_layers: name the module in these paths (crate::<module>::...)" >&2
        exit 1
    fi
    found="$(grep -o 'crate::[a-z_0-9]*' <<<"$code" | sed 's/^crate:://' | sort -u || true)"
    list=""
    for d in $found; do
        [[ "$d" != "$m" && -e "$d.rs" ]] && list+="$d "
    done
    deps[$m]="$list"
done

# Everything each module reaches, by repeated widening (a handful of modules).
declare -A reach
for m in "${modules[@]}"; do reach[$m]=" ${deps[$m]}"; done
changed=1
while [[ $changed -eq 1 ]]; do
    changed=0
    for m in "${modules[@]}"; do
        for d in ${reach[$m]}; do
            for e in ${deps[$d]}; do
                if [[ "${reach[$m]}" != *" $e "* ]]; then
                    reach[$m]+="$e "
                    changed=1
                fi
            done
        done
    done
done

cycles=0
for m in "${modules[@]}"; do
    if [[ "${reach[$m]}" == *" $m "* ]]; then
        echo "check_layers: $m depends on itself through: ${deps[$m]}" >&2
        cycles=1
    fi
done
if [[ $cycles -eq 1 ]]; then
    echo "check_layers: import cycles among src/ modules (see above); direct dependencies:" >&2
    for m in "${modules[@]}"; do echo "  $m -> ${deps[$m]}" >&2; done
    exit 1
fi
for m in "${modules[@]}"; do echo "  $m -> ${deps[$m]:-(nothing)}"; done
echo "check_layers: no import cycle among the ${#modules[@]} modules of src/"
