//! Tensor copy sizes: a TMA copy's bytes from its tensor map's box (`--arg` or a captured
//! launch), else from the `expect_tx` it is paired with; and the windows that pair a thread's
//! expects with its copies.

use super::*;

/// `N` or `N+OFFSET`: how `--arg` names a parameter (or a field of one).
pub(super) fn arg_name((i, o): (u32, u64)) -> String {
    if o == 0 {
        i.to_string()
    } else {
        format!("{i}+{o}")
    }
}

/// Give every tensor copy its byte count: from `--arg MAP=BYTES` for its tensor-map parameter,
/// else from the `expect_tx` of the same thread it is paired with (copies share the expected
/// bytes equally). Tensor stores need `--arg`.
pub(super) fn resolve_tensor_bytes(inp: &mut Input, notes: &mut Vec<String>) -> Result<(), Error> {
    let params = inp.params;
    let func = inp.func;
    let mut noted = BTreeSet::new();
    let err = |e: &Event, message: String, help: String| Error {
        message,
        line: Some(func.instrs[e.instr as usize].line),
        src: func.instrs[e.instr as usize].src.map(Box::new),
        help: Some(help),
    };
    let map_name = |p: Option<(u32, u64)>| -> String {
        match p {
            Some((i, o)) => format!(
                "parameter {i} (`{}`){}",
                crate::exec::short_param(
                    func.params.get(i as usize).map_or("?", |x| x.name.as_str())
                ),
                if o == 0 {
                    String::new()
                } else {
                    format!(" at byte {o}")
                }
            ),
            None => "a tensor map that is not a kernel parameter".into(),
        }
    };
    let cluster = inp.cluster;
    let plan = crate::multicast::Plan::new(&inp.traces, tx_windows, params);
    for t in inp.traces.iter_mut() {
        // Tensor stores: their size must be given.
        for e in t.events.iter_mut() {
            let param = match &e.ev {
                Ev::TmaStore {
                    len: None, param, ..
                } => *param,
                _ => continue,
            };
            match param.and_then(|p| params.get(&p)) {
                Some(&b) => {
                    if let Ev::TmaStore { len, .. } = &mut e.ev {
                        *len = Some(b.max(1) as u64);
                    }
                }
                None => {
                    return Err(err(
                        e,
                        format!(
                            "the tensor store reads a box of shared memory whose size the PTX \
                                 does not say (its tensor map is {})",
                            map_name(param)
                        ),
                        format!(
                            "give the bytes one copy through that map moves with `--arg {}=BYTES`",
                            param.map_or("MAP".into(), arg_name)
                        ),
                    ));
                }
            }
        }
        // Tensor loads.
        let bars: BTreeSet<SAddr> = t
            .events
            .iter()
            .filter_map(|e| match &e.ev {
                Ev::Copy {
                    bytes: CopyBytes::TensorMap { .. },
                    bar,
                    ..
                } => Some(*bar),
                _ => None,
            })
            .collect();
        for bar in bars {
            let windows = tx_windows(t, bar);
            for (j, (exp, copies)) in windows.into_iter().enumerate() {
                let mut known = 0i64;
                let mut open = Vec::new();
                for &c in &copies {
                    match &t.events[c].ev {
                        Ev::Copy {
                            bytes: CopyBytes::Known(n) | CopyBytes::Share(n),
                            ..
                        } => known += n,
                        Ev::Copy {
                            bytes: CopyBytes::TensorMap { param },
                            ..
                        } => match param.and_then(|p| params.get(&p)) {
                            Some(&b) => {
                                known += b;
                                if let Ev::Copy { bytes, .. } = &mut t.events[c].ev {
                                    *bytes = CopyBytes::Known(b);
                                }
                            }
                            None => open.push(c),
                        },
                        _ => {}
                    }
                }
                if open.is_empty() {
                    continue;
                }
                let expected = exp.map(|e| match &t.events[e].ev {
                    Ev::Arrive { tx: Some(n), .. } => *n,
                    Ev::ExpectTx { bytes, .. } => *bytes,
                    _ => 0,
                });
                let first = &t.events[open[0]];
                let param = match &first.ev {
                    Ev::Copy {
                        bytes: CopyBytes::TensorMap { param },
                        ..
                    } => *param,
                    _ => None,
                };
                let help = format!(
                    "give the bytes one copy through its tensor map moves with `--arg {}=BYTES`",
                    param.map_or("MAP".into(), arg_name)
                );
                let Some(expected) = expected else {
                    return Err(err(
                        first,
                        format!(
                            "a tensor copy through {} whose size the PTX does not say, and no \
                             expect_tx of the same thread on its barrier to take it from",
                            map_name(param)
                        ),
                        help,
                    ));
                };
                // Multicast copies land on the peers' barriers too (multicast.rs).
                let mask_of = |c: usize| match &t.events[c].ev {
                    Ev::Copy { multicast, .. } => *multicast,
                    _ => None,
                };
                if let Some(mask) = open.iter().find_map(|&c| mask_of(c)) {
                    let (size, why) = plan.share(t.rank, t.tid, bar.off, j, cluster).map_err(
                        |why| {
                            err(
                                first,
                                format!(
                                    "the multicast tensor copy through {} (mask {mask:#x}) has no \
                                     size in the PTX, and the expect_tx of the blocks it lands in \
                                     does not tell it: {why}",
                                    map_name(param)
                                ),
                                format!(
                                    "give the bytes one copy through its tensor map moves with \
                                     `--arg {}=BYTES`, or the launch with `--launch FILE#N` \
                                     (`phasecheck capture`)",
                                    param.map_or("MAP".into(), arg_name)
                                ),
                            )
                        },
                    )?;
                    for &c in &open {
                        let line = func.instrs[t.events[c].instr as usize].line;
                        if noted.insert(line) {
                            notes.push(format!(
                                "the multicast tensor copy at PTX line {line} is taken to move \
                                 {size} bytes: the {expected} bytes of the expect_tx at PTX line \
                                 {} over the copies that land on its barrier ({why}; give --arg \
                                 {}=BYTES to set it)",
                                exp.map_or(0, |e| func.instrs[t.events[e].instr as usize].line),
                                param.map_or("MAP".into(), arg_name)
                            ));
                        }
                        if let Ev::Copy { bytes, .. } = &mut t.events[c].ev {
                            *bytes = CopyBytes::Share(size);
                        }
                    }
                    continue;
                }
                let rest = expected - known;
                let n = open.len() as i64;
                if rest <= 0 || rest % n != 0 {
                    return Err(err(
                        first,
                        format!(
                            "cannot share the {expected} expected bytes of the paired expect_tx \
                             among {n} tensor copies (after {known} bytes of copies of known size)"
                        ),
                        help,
                    ));
                }
                for &c in &open {
                    let line = func.instrs[t.events[c].instr as usize].line;
                    let param = match &t.events[c].ev {
                        Ev::Copy {
                            bytes: CopyBytes::TensorMap { param },
                            ..
                        } => *param,
                        _ => None,
                    };
                    if noted.insert(line) {
                        notes.push(format!(
                            "the tensor copy at PTX line {line} is taken to move {} bytes: its share \
                             of the expect_tx at PTX line {} (give --arg {}=BYTES to set it)",
                            rest / n,
                            exp.map_or(0, |e| func.instrs[t.events[e].instr as usize].line),
                            param.map_or("MAP".into(), arg_name)
                        ));
                    }
                    if let Ev::Copy { bytes, .. } = &mut t.events[c].ev {
                        *bytes = CopyBytes::Share(rest / n);
                    }
                }
            }
        }
    }
    Ok(())
}

/// A thread's tx events on barrier `bar`, in windows: each expect (`Arrive` with tx or
/// `ExpectTx`) with the copies it owns (those after it when the thread expects first, else
/// those before it). Indices into `t.events`.
pub(crate) fn tx_windows(t: &Trace, bar: SAddr) -> Vec<(Option<usize>, Vec<usize>)> {
    // The thread's tx events on this barrier, in order: expects and copies.
    let idx: Vec<usize> = t
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| match &e.ev {
            Ev::Arrive {
                bar: b,
                tx: Some(_),
                ..
            }
            | Ev::ExpectTx { bar: b, .. } => *b == bar,
            Ev::Copy { bar: b, .. } => *b == bar,
            _ => false,
        })
        .map(|(i, _)| i)
        .collect();
    let is_expect = |e: &Ev| matches!(e, Ev::Arrive { .. } | Ev::ExpectTx { .. });
    let expects_first = idx.first().is_some_and(|&i| is_expect(&t.events[i].ev));
    // Windows: each expect owns the copies after it (expects first) or before it.
    let mut windows: Vec<(Option<usize>, Vec<usize>)> = Vec::new();
    let mut cur: (Option<usize>, Vec<usize>) = (None, Vec::new());
    for &i in &idx {
        if is_expect(&t.events[i].ev) {
            if expects_first {
                if cur.0.is_some() || !cur.1.is_empty() {
                    windows.push(std::mem::take(&mut cur));
                }
                cur.0 = Some(i);
            } else {
                cur.0 = Some(i);
                windows.push(std::mem::take(&mut cur));
            }
        } else {
            cur.1.push(i);
        }
    }
    if cur.0.is_some() || !cur.1.is_empty() {
        windows.push(cur);
    }
    windows
}
