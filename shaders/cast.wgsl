// voxcast shader, casting: one ray's whole walk (cast_ray, twin of cast_ray in
// src/cpu_ref.rs), a hit's id and UV made once the walk has ended (finished), and a segment
// cast with the layers of conservative line of sight (cast_segment, on_high_faces and nearer,
// twins in src/cpu_ref/queries.rs).

// The hit with its id and UV, once the walk has ended: the id of a voxel whose occupancy
// bit alone stopped the ray (ID_LATER) read from its chunk, and the UV from the crossings and
// distance the hit was made with. Made once after the walk, not where the walk stops: lanes
// of a SIMD group that stop at different steps would each run it inside the loop.
fn finished(ray: Ray, hit: Hit) -> Hit {
    var h = hit;
    if ((h.status & 15u) == STATUS_HIT) {
        if (h.id == ID_LATER) {
            h.id = stored_id(h.voxel);
        }
        h.uv = face_uv(ray, h.n, h.distance, (h.status >> 4u) & 3u);
    }
    return h;
}

// `finished` where `finish` (uniform across a dispatch), else the hit as the walk left it.
fn finished_if(ray: Ray, hit: Hit, finish: bool) -> Hit {
    if (finish) {
        return finished(ray, hit);
    }
    return hit;
}

// A walk's state where it stopped at a shaped voxel (cast_from's input and output): the
// stepping state, whether it is still in the origin voxel, whether it has been in air.
struct Cast {
    d: Dda,
    in_origin: bool,
    air_seen: bool,
}

// The state a ray's walk starts from.
fn cast_start(ray: Ray) -> Cast {
    var d: Dda;
    d.voxel = ray.voxel;
    d.step = vec3<i32>(axis_step(ray, 0u), axis_step(ray, 1u), axis_step(ray, 2u));
    d.n = ray.n;
    d.entry_axis = (ray.flags >> RAY_ENTRY_SHIFT) & 3u;
    for (var a = 0u; a < 3u; a += 1u) {
        refresh_axis(ray, &d, a);
    }
    d.t = 0.0;
    if (d.entry_axis != AXIS_NONE) {
        d.t = crossing_t(ray.b[d.entry_axis], ray.inv[d.entry_axis], d.n[d.entry_axis] - 1u);
    }
    let clipped = (ray.flags & RAY_CLIPPED) != 0u;
    var c: Cast;
    c.d = d;
    c.in_origin = !clipped;
    c.air_seen = (OPTIONS & FLAG_ORIGIN_MASK) != ORIGIN_EXIT_SOLID || clipped;
    return c;
}

// The whole algorithm for one ray; twin of `cast_ray` in src/cpu_ref.rs. Where the world has
// shapes, the walk (cast_from) returns at a stopping voxel with a shape, and the box test and
// its decision (the CPU's, in the same order) run here, out of the walk's loop, which then
// resumes from the next voxel: the walk's loop stays as it is without shapes.
fn cast_ray(ray: Ray) -> Hit {
    var c = cast_start(ray);
    for (var iter = 0u; iter < MAX_ITERATIONS; iter += 1u) {
        let h = cast_from(ray, &c);
        // Without shapes the walk never stops short of its answer.
        if ((OPTIONS & FLAG_SHAPES) == 0u || (h.status & 15u) != STATUS_SHAPED) {
            return h;
        }
        let sh = shape_hit(ray, c.d.n, shape_entry(h.id));
        let skip_origin = c.in_origin && (OPTIONS & FLAG_ORIGIN_MASK) == ORIGIN_SKIP;
        if (!skip_origin && c.air_seen) {
            if (sh.found) {
                return shape_answer(ray, c.d, h.id, sh);
            }
            c.air_seen = true;
        } else if (!c.air_seen) {
            // ExitSolid before the ray has been in air: still in a solid where it entered
            // this voxel inside a box (or starts inside one).
            if (sh.found && sh.t != c.d.t) {
                return shape_answer(ray, c.d, h.id, sh);
            } else if (!sh.found) {
                c.air_seen = true;
            }
        }
        // On from the voxel, as the walk goes on from one that does not stop the ray.
        c.in_origin = false;
        if ((OPTIONS & FLAG_CONSERVATIVE) != 0u) {
            let t_cross = c.d.t_next[next_axis(c.d.t_next)];
            if (t_cross > c.d.t && t_cross <= ray.max_distance) {
                let extra = check_tie_extras(ray, c.d, t_cross, c.air_seen);
                if ((extra.status & 15u) != STATUS_MISS) {
                    return extra;
                }
            }
        }
        // (A pointer to a struct's member cannot be a call's argument in naga's SPIR-V.)
        var d = c.d;
        if (!dda_step(ray, &d)) {
            return miss();
        }
        c.d = d;
    }
    return make_hit(STATUS_RUNAWAY, c.d.voxel, c.d.t, 0u, AXIS_NONE, false, vec3<u32>(0u));
}

// The walk from the state `c`, to an answer, or (where the world has shapes) to a stopping
// voxel with a shape: then STATUS_SHAPED with the voxel's id, and `c` left at that voxel.
fn cast_from(ray: Ray, c: ptr<function, Cast>) -> Hit {
    let origin_policy = OPTIONS & FLAG_ORIGIN_MASK;
    let stop_unloaded = (OPTIONS & FLAG_STOP_UNLOADED) != 0u;
    let conservative = (OPTIONS & FLAG_CONSERVATIVE) != 0u;
    let per_voxel = (OPTIONS & FLAG_PER_VOXEL) != 0u;
    var d = (*c).d;
    var in_origin = (*c).in_origin;
    var air_seen = (*c).air_seen;

    var cur_chunk = vec3<i32>(-1);
    var entry = TAG_UNLOADED;
    for (var iter = 0u; iter < MAX_ITERATIONS; iter += 1u) {
        // Entered a new chunk (or started): classify it once.
        let chunk = d.voxel >> vec3<u32>(5u);
        if (any(chunk != cur_chunk)) {
            // Past the box of a window that follows a center the GPU knows nothing: the ray
            // ends as unloaded there, whatever the unloaded policy (a step beyond the i128
            // world is still a miss).
            if ((OPTIONS & FLAG_PARTIAL) != 0u && !held(d.voxel) && !beyond_world(d.voxel)) {
                return make_hit(STATUS_UNLOADED, d.voxel, d.t, 0u, AXIS_NONE, false, vec3<u32>(0u));
            }
            if (!in_window(d.voxel)) {
                // Nothing outside the window is loaded; a step beyond the i128 world ends the
                // ray as a miss (the CPU's `dda_step`), whatever the unloaded policy.
                if (!stop_unloaded || beyond_world(d.voxel)) {
                    return miss();
                }
                entry = TAG_UNLOADED;
            } else {
                entry = table_entry(d.voxel);
            }
            cur_chunk = chunk;
        }
        let tag = entry & TAG_MASK;
        // Under Report the origin voxel is examined like any other.
        if (tag == 0u && (!in_origin || origin_policy == ORIGIN_REPORT) && air_seen && !conservative && !per_voxel) {
            var walk_id = 0u;
            let walk = walk_dense(ray, &d, entry, &walk_id);
            if (walk == WALK_HIT) {
                if ((OPTIONS & FLAG_SHAPES) == 0u) {
                    return hit(ray, d, walk_id);
                }
                let id = voxel_id_now(d, walk_id);
                if (shape_entry(id) == 0u) {
                    return hit(ray, d, id);
                }
                (*c).d = d;
                (*c).in_origin = in_origin;
                (*c).air_seen = air_seen;
                return make_hit(STATUS_SHAPED, d.voxel, d.t, id, AXIS_NONE, false, d.n);
            } else if (walk == WALK_MISS) {
                return miss();
            } else if (walk == WALK_LEFT_CHUNK) {
                continue;
            }
            // WALK_EMPTY_BRICK: examined below, which skips the brick.
        }
        // Examine the current voxel.
        let skip_origin = in_origin && origin_policy == ORIGIN_SKIP;
        var stop_id = 0u;
        var stopping = false;
        var passable = false;
        var box_lo = cur_chunk * 32;
        var box_hi = box_lo + vec3<i32>(31);
        if (tag == TAG_UNLOADED) {
            if (!stop_unloaded) {
                passable = true;
            } else if (!skip_origin) {
                return make_hit(STATUS_UNLOADED, d.voxel, d.t, 0u, AXIS_NONE, false, vec3<u32>(0u));
            }
        } else if (tag == TAG_EMPTY) {
            passable = true;
        } else if (tag == TAG_UNIFORM) {
            let id = entry & 0xFFFFu;
            if (stops(id)) {
                stopping = true;
                stop_id = id;
            } else {
                passable = true;
            }
        } else {
            let l = vec3<u32>(d.voxel & vec3<i32>(31));
            let word = occupancy[entry * OCC_WORDS + (l.y | (l.z << 5u))];
            if (((word >> l.x) & 1u) != 0u) {
                if ((OPTIONS & FLAG_EVERY_NON_AIR) != 0u) {
                    stopping = true;
                    stop_id = ID_LATER;
                } else {
                    let id = slot_id(entry, l);
                    if (stops(id)) {
                        stopping = true;
                        stop_id = id;
                    }
                }
            } else {
                var lo: vec3<u32>;
                var hi: vec3<u32>;
                if (empty_box(entry, l, &lo, &hi)) {
                    passable = true;
                    box_hi = box_lo + bitcast<vec3<i32>>(hi);
                    box_lo += bitcast<vec3<i32>>(lo);
                }
            }
        }
        // A whole chunk that holds nothing that stops the ray: cross the run of such chunks
        // around it.
        if (passable && tag != 0u && !per_voxel) {
            region_run(cur_chunk, stop_unloaded, &box_lo, &box_hi);
            if ((OPTIONS & FLAG_PARTIAL) != 0u) {
                // A run stops at the box's faces: the next voxel is where the ray leaves it.
                box_lo = max(box_lo, held_lo());
                box_hi = min(box_hi, held_hi());
            }
        }
        if (stopping && (OPTIONS & FLAG_SHAPES) != 0u) {
            stop_id = voxel_id_now(d, stop_id);
            if (shape_entry(stop_id) != 0u) {
                (*c).d = d;
                (*c).in_origin = in_origin;
                (*c).air_seen = air_seen;
                return make_hit(STATUS_SHAPED, d.voxel, d.t, stop_id, AXIS_NONE, false, d.n);
            }
        }
        if (stopping) {
            if (!skip_origin && air_seen) {
                return hit(ray, d, stop_id);
            }
        } else {
            air_seen = true;
        }
        // Skip a box that holds nothing that stops the ray, then cross out of it.
        if (passable && !per_voxel) {
            if (!skip_box(ray, &d, box_lo, box_hi)) {
                return miss();
            }
        }
        in_origin = false;
        if (conservative) {
            let t_cross = d.t_next[next_axis(d.t_next)];
            if (t_cross > d.t && t_cross <= ray.max_distance) {
                let extra = check_tie_extras(ray, d, t_cross, air_seen);
                if ((extra.status & 15u) != STATUS_MISS) {
                    return extra;
                }
            }
        }
        if (!dda_step(ray, &d)) {
            return miss();
        }
    }
    return make_hit(STATUS_RUNAWAY, d.voxel, d.t, 0u, AXIS_NONE, false, vec3<u32>(0u));
}

// Whether hit a lies strictly nearer than b: a miss is never nearer, anything else is nearer
// than a miss; a runaway is nearer than everything, so that it is reported. Twin of `nearer`
// in src/cpu_ref/queries.rs.
fn nearer(a: Hit, b: Hit) -> bool {
    let sa = a.status & 15u;
    let sb = b.status & 15u;
    if (sa == STATUS_MISS || sb == STATUS_RUNAWAY) {
        return false;
    }
    return sb == STATUS_MISS || sa == STATUS_RUNAWAY || a.distance < b.distance;
}

// A hit in the layer moved down on the axes of `layer` lies at its voxel's high face on those
// axes: its UV there is 1, where the moved ray gives 0. Twin of `on_high_faces` in
// src/cpu_ref/queries.rs.
fn on_high_faces(hit: Hit, layer: u32) -> Hit {
    var h = hit;
    let face = (h.status >> 4u) & 3u;
    if ((h.status & 15u) == STATUS_HIT && face != AXIS_NONE) {
        // The face's UV axes: x face (y, z), y face (x, z), z face (x, y).
        let u = select(0u, 1u, face == 0u);
        let v = select(1u, 2u, face != 2u);
        if (((layer >> u) & 1u) != 0u) {
            h.uv.x = 1.0;
        }
        if (((layer >> v) & 1u) != 0u) {
            h.uv.y = 1.0;
        }
    }
    return h;
}

// cast_ray, and for conservative line of sight on a ray that lies in a voxel face plane also
// the layers of voxels on the other side of each such plane: the ray shifted one voxel down on
// those axes (the host's clipping and step never move them, so the shifted start state is that
// layer's). The nearest answer wins, at equal distances the first layer. With `finish`, each
// hit gets its id and UV (`finished`); without, a hit's id and UV are not made (agent pairs
// asked for their bits alone). Twin of `cast_segment` in src/cpu_ref/queries.rs.
fn cast_segment(ray: Ray, finish: bool) -> Hit {
    if ((OPTIONS & FLAG_CONSERVATIVE) == 0u) {
        return finished_if(ray, cast_ray(ray), finish);
    }
    let planes = (ray.flags >> RAY_PLANE_SHIFT) & 7u;
    if (planes == 0u) {
        // Most rays: without the loop, which would keep `best` live around cast_ray.
        return finished_if(ray, cast_ray(ray), finish);
    }
    var best = miss();
    for (var layer = 0u; layer < 8u; layer += 1u) {
        if ((layer & planes) != layer) {
            continue;
        }
        var r = ray;
        r.voxel -= vec3<i32>(vec3<u32>(layer, layer >> 1u, layer >> 2u) & vec3<u32>(1u));
        // A layer beyond the edge of the i128 world holds nothing (the CPU skips it).
        if (layer != 0u && beyond_world(r.voxel)) {
            continue;
        }
        let h = on_high_faces(finished_if(r, cast_ray(r), finish), layer);
        if (nearer(h, best)) {
            best = h;
        }
    }
    return best;
}
