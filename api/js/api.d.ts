// api.d.ts -- the types of histd's JSON documents, generated from api/openapi.yaml
// by api/js/tools/api-types.py: do not edit; run it again when the contract changes.

/** An integer: a Number, or a BigInt beyond 2^53 (Number.MAX_SAFE_INTEGER), every digit kept. */
export type Int = number | bigint;

export interface Problem {
  type: "about:blank";
  title: string;
  status: Int;
  detail: string;
}

export type Vec3 = Array<number>;

export interface Dataset {
  /** SHA-256(SHA-256(x) || SHA-256(y) || SHA-256(z)) over the float64 little-endian coordinate arrays; with weights, frames or a box, SHA-256 of those three and SHA-256 of the payload's tail (the weights, then a record of 8 float64 per frame: points, box kind, ax, bx, by, cx, cy, cz; then the topology, a sky catalogue's ra, dec, dist a point and its region labels). A growing dataset's id is random, its own (its points change). */
  id: string;
  /** The points of every frame together. */
  n: Int;
  /** Size of the float64 payload (24 bytes per point */
  bytes: Int;
  /** The format it was first uploaded in. */
  format: "json" | "csv" | "xyz" | "f64" | "f32" | "lammps" | "dcd" | "xtc" | "trr" | "netcdf" | "gro" | "pdb" | "sky-csv" | "sky-json" | "fits";
  /** Frames (snapshots) one after another; a job runs each and sums them. */
  frames?: Int;
  /** The points carry weights (a job uses them with "weights": true). */
  weighted?: boolean;
  /** The length unit the file's format implies (nm for GROMACS files, Angstrom for XYZ, PDB, DCD and AMBER); absent when the format does not say (JSON, CSV, raw floats, LAMMPS dumps: the run's units style). Coordinates are never converted. */
  unit?: string;
  /** The first frame's periodic box from the file, as a job's box is written ([Lx, Ly, Lz] or LAMMPS's [lx, ly, lz, xy, xz, yz]); each frame has its own. A job that gives no box uses the frames' boxes. */
  box?: Array<number> | null;
  bounds: {
    min: Vec3;
    max: Vec3;
  };
  /**
   * What the file said of its atoms (present when it named them, or
   * has several frames), for choosing selections (select_a,
   * select_b): the atoms a frame, the count of each element, atom
   * name, residue name and type (the first 32 distinct values, then
   * "..." counts the rest), the molecules, and the last frame's box.
   */
  atoms?: {
    per_frame?: Int;
    elements?: {
      [key: string]: Int;
    };
    names?: {
      [key: string]: Int;
    };
    resnames?: {
      [key: string]: Int;
    };
    types?: {
      [key: string]: Int;
    };
    molecules?: Int;
    box_last?: Array<number> | null;
  };
  created_at: string;
  name?: string;
  /** Present when the payload file is missing or corrupt. */
  error?: string;
  /** When the daemon deletes the dataset (the upload's ?expires=); null: never. */
  expires_at?: string | null;
  /** Uploaded with ?growing=true: frames are appended to it (POST /v1/datasets/{id}/frames) until it is sealed. */
  growing?: boolean;
  /** A growing dataset that takes no more frames (POST /v1/datasets/{id}/seal); present for growing datasets only. */
  sealed?: boolean;
  /** Present for a sky catalogue (sky-csv, sky-json, fits): how its distances were given, "dist" (comoving, Mpc/h) or "z" (redshifts, made into distances with omega_m; null for "dist"). */
  sky?: {
    distance: "dist" | "z";
    omega_m: number | null;
  };
  /** The jackknife regions its points are labelled with (labels 0 .. regions - 1, from the region column or ?regions=); 0: none. */
  regions?: Int;
}

/**
 * The job's parameters as resolved (buckets filled in when defaulted):
 * the parameters it was given, plus kernel and precision always.
 */
export interface Params {
  bucket_width?: number;
  buckets?: Int;
  r_max?: number;
  edges?: Array<number>;
  log_bins?: Array<number>;
  /** [Lx, Ly, Lz], or LAMMPS [lx, ly, lz, xy, xz, yz] for a triclinic box. */
  box?: Array<number>;
  within?: number;
  weights?: boolean;
  select_a?: string;
  select_b?: string;
  exclude?: "molecule";
  pairs?: "distinct" | "ordered";
  images?: "nearest" | "all";
  frames?: string;
  per_frame?: boolean;
  blocks?: Int;
  partials?: "element" | "type" | "name" | "resname";
  norm?: "rdf" | "density" | "none";
  per_point?: boolean;
  per_point_histogram?: boolean;
  nearest?: boolean;
  pairs_within?: number;
  statistic?: "histogram" | "rp_pi" | "s_mu" | "theta";
  theta_edges?: Array<number>;
  theta_log_bins?: Array<number>;
  rp_edges?: Array<number>;
  rp_log_bins?: Array<number>;
  pi_max?: number;
  pi_bins?: Int;
  mu_bins?: Int;
  mu_max?: number;
  los?: "z" | "midpoint";
  ravg?: boolean;
  jackknife?: boolean;
  topology?: string;
  kernel: string;
  block_size?: Int;
  precision: "exact" | "fast";
  threads?: Int;
  devices?: Array<Int>;
}

/**
 * The parameters of a job, one row each of the table in
 * src/io/params.c (test_openapi checks the two agree). Exactly one way
 * of binning: bucket_width [with buckets], r_max with buckets, edges,
 * log_bins, or within.
 */
export interface JobParams {
  /** Bucket width in the points' units: bin k holds the distances d with floor(d / width) = k. */
  bucket_width?: number;
  /** Bucket count; absent, null or 0 = enough to cover the data's diagonal (or half a periodic box). */
  buckets?: Int | null;
  /** The last edge; with buckets, width = r_max / buckets. */
  r_max?: number | null;
  /** Explicit ascending edges: bin k holds E[k] <= d < E[k+1]; d < E[0] counts in below, d >= E[K] in overflow. */
  edges?: Array<number> | null;
  /** [r_min, r_max, buckets]: log-spaced edges, computed once in float64 and published with the result. */
  log_bins?: Array<number> | null;
  /**
   * A periodic box: [L] (a cube), [Lx, Ly, Lz], LAMMPS's
   * [lx, ly, lz, xy, xz, yz], or GROMACS's nine numbers (the box
   * vectors a, b, c). Distances are minimum images; the last edge
   * must not exceed half the box's shortest perpendicular width.
   * The result adds g(r) and the coordination number.
   */
  box?: Array<number> | null;
  /** Count the pairs with d <= within instead of a histogram; 0 counts exact collisions (equal x, y and z) in O(n). */
  within?: number | null;
  /** Each pair also adds w_i * w_j to its bin (the datasets must carry weights). */
  weights?: boolean | null;
  /**
   * The dataset's atoms for A: "all", or KIND:LIST with KIND one of
   * element, name, resname (strings; element ignores case), type,
   * resid, mol (whole numbers and ranges a-b) or index (from 0), and
   * LIST comma-separated: "element:O", "name:OW,HW1", "index:0-99".
   * The kinds but index need a file that names them (GRO, PDB, a
   * LAMMPS dump's type/mol/element columns, XYZ elements).
   */
  select_a?: string | null;
  /**
   * The atoms for B, the same way: of dataset_b when given, else of
   * the dataset itself, so that A x B runs between two selections of
   * one dataset (an O-H g(r) from one upload).
   */
  select_b?: string | null;
  /**
   * "molecule": leave out the pairs whose atoms share a molecule id
   * (a LAMMPS dump's mol column; GRO and PDB residues; a CSV's mol column
   * or an extended XYZ's mol:I:1). g(r) is then
   * normalised by the pairs allowed, and the result says how many
   * were excluded. Not with weights.
   */
  exclude?: "molecule" | "" | null;
  /**
   * How two selections of one dataset (select_b without dataset_b)
   * pair. "distinct" (the default): an atom never pairs with itself;
   * the same atoms twice are a self job (i < j, N(N-1)/2 pairs), and
   * selections that share some atoms count each unordered pair of
   * distinct atoms once. "ordered": every (a, b) of A x B, an atom
   * in both meeting itself at r = 0, as MDAnalysis's InterRDF
   * counts without exclusion_block (g(r) normalised by N_A N_B).
   * The result's `pairing` says which rule ran. A pair list
   * (pairs_within) of selections that share only some atoms is
   * refused (400). Two datasets keep every pair either way.
   */
  pairs?: "distinct" | "ordered" | "" | null;
  /**
   * START:STOP:STEP, the frames of a trajectory to count, from 0, each
   * part optional ("100:" from frame 100, "::10" every tenth,
   * "0:1000:5"); of B too when B has several frames. The result's
   * frames counts those kept.
   */
  frames?: string | null;
  /**
   * Also return each frame's counts (and, periodic, its pairs, volume
   * and g(r)): the result's per_frame, a frames x bins table (as
   * MDTraj's time-dependent g(r)); at most 2^27 cells. Not with
   * within (400).
   */
  per_frame?: boolean | null;
  /**
   * Error bars: the frames cut into this many consecutive blocks
   * (frame f in block floor(f K / F)); the result adds `blocks` and
   * a `block` object: each block's g and coordination, their means
   * and the standard errors of the means. Keeps per_frame's table.
   * At least as many frames as blocks; a periodic histogram.
   */
  blocks?: Int | null;
  /**
   * Also the result's `rdf`: MDAnalysis's InterRDF results.rdf in
   * that norm, from ordered pairs (a self job's twice): rdf is
   * count <V> / (V_shell pairs), <V> the frames' mean volume;
   * density count / (frames V_shell); none count / frames.
   */
  norm?: "rdf" | "density" | "none" | null;
  /**
   * Every species pair of A's atoms in one job: the atoms sorted into
   * species by this field (names in strcmp order, types by number),
   * each species pair counted as its own piece, so each pair is met
   * once. The result adds partials (S(S+1)/2), species and a
   * `partial` object (each pair's a, b, total, counts, g,
   * coordination_ab, coordination_ba). At most 16 species; one set
   * (no dataset_b or select_b); bins only.
   */
  partials?: "element" | "type" | "name" | "resname" | "" | null;
  /**
   * With within R: for every point of A, the points of B (other than
   * itself) with d <= R -- the local density, each atom's
   * coordination -- and with weights the sum of their w_j. The
   * result's neighbours (and neighbour_weights) hold a row per point
   * of A, one row per frame (frames x points), and index names each
   * row's point in the dataset.
   */
  per_point?: boolean | null;
  /**
   * Periodic: nearest (the default) measures each pair by its minimum
   * image, so r_max (the last edge) is at most half the box's
   * shortest width. all counts every periodic image within r_max,
   * past half the box too: each pair (i, j) at every lattice
   * translation n, measured in open space from i to j's image
   * x_j + n H (x' = ((x + na ax) + nb bx) + nc cx, y' = (y + nb by) +
   * nc cy, z' = z + nc cz, each operation rounded alone), and each
   * atom with its own images; a set's own pairs once (n = 0: i < j;
   * of n and -n the one whose first nonzero component is positive).
   * g(r) keeps LAMMPS's normalisation (its compute rdf with ghost
   * atoms beyond the box gives the same), so it tends to N/(N-1).
   * Histograms only; not with exclude; bins with a count; at most
   * 4096 translations.
   */
  images?: "nearest" | "all" | null;
  /**
   * With bins (r_max and buckets, bucket_width and buckets, edges or
   * log_bins): for every point of A, the histogram of its distances
   * to the points of B other than itself (MDAnalysis's InterRDF_s,
   * the site-specific g(r)), every frame's summed. The result's
   * point object holds counts (points x bins), below, partners (the
   * points of B it met, every frame's) and, periodic, each point's
   * g; counts, g and coordination are the whole's, of these ordered
   * pairs. Not with weights, per_frame, blocks, partials or norm; a
   * result larger than --max-result-bytes is refused at submit.
   */
  per_point_histogram?: boolean | null;
  /**
   * For every point of A, the contract's distance d to its nearest
   * other point of B and that point's index (ties: the lowest
   * index): the result's nearest_d and nearest, per frame. With
   * within R only points within R count (nearest -1 and nearest_d
   * null where none is).
   */
  nearest?: boolean | null;
  /**
   * The distance join: every pair with d <= this distance, as the
   * result's i, j (indices in the datasets; i < j for self pairs), d
   * and, over several frames, frame. The list is written to the data
   * dir as it is found, never held whole; a list larger than the
   * daemon's --max-pairs-bytes fails before any pair is written, with
   * a sentence naming both sizes.
   */
  pairs_within?: number | null;
  /**
   * theta: counts in bins of the angle between two points of sky
   * catalogues (sky-csv, sky-json, fits), by theta_edges or
   * theta_log_bins in degrees: the chord c = |u_i - u_j| of their unit
   * vectors (computed once from ra and dec) against chord edges
   * 2 sin(theta / 2); the result's theta_edges beside the chords' edges.
   * histogram: counts in bins of the distance d. rp_pi: counts in
   * bins of (r_p, pi), r_p by the bins (edges, log_bins or
   * bucket_width with buckets; rp_edges and rp_log_bins say the
   * same) and pi in pi_bins equal bins of [0, pi_max). s_mu: counts
   * in bins of (s, mu), s = d by the bins and mu = pi / s in mu_bins
   * equal bins of [0, mu_max] (mu = mu_max in the last). The line of
   * sight (los) z: r_p = sqrt(dx*dx + dy*dy), pi = |dz| (each axis's
   * minimum image in a periodic box); midpoint (open space): with
   * s = v_i - v_j and l = v_i + v_j, pi = |s.l| / sqrt(l.l) (0 when
   * l.l = 0) and r_p = sqrt(max(s.s - pi*pi, 0)). counts is buckets x
   * buckets2; below holds the pairs below r_p's (or s's) first edge
   * with pi (mu) in range, overflow every other pair outside. With
   * weights, A x B (dataset_b), frames (summed); not with within,
   * per_frame, blocks, partials, exclude, images all or norm.
   */
  statistic?: "histogram" | "rp_pi" | "s_mu" | "theta" | null;
  /** rp_pi: r_p's edges, the same as edges (written back as edges). */
  rp_edges?: Array<number> | null;
  /** theta: the angles' edges in degrees, 0 to 180 (the same as edges, which statistic theta reads as degrees). */
  theta_edges?: Array<number> | null;
  /** theta: [min, max, bins] in degrees, log-spaced (the same as log_bins). */
  theta_log_bins?: Array<number> | null;
  /** rp_pi: [r_min, r_max, buckets], the same as log_bins. */
  rp_log_bins?: Array<number> | null;
  /** rp_pi: pi counts while pi < pi_max; in a periodic box at most half its z width (and r_p's last edge at most half its x and y widths). */
  pi_max?: number | null;
  /** rp_pi: pi's equal bins, of width pi_max / pi_bins. */
  pi_bins?: Int | null;
  /** s_mu: mu's equal bins, of width mu_max / mu_bins. */
  mu_bins?: Int | null;
  /** s_mu: mu counts while mu <= mu_max. */
  mu_max?: number | null;
  /** rp_pi, s_mu: the line of sight: z (boxes), or the pair's midpoint (sky catalogues, open space). */
  los?: "z" | "midpoint" | null;
  /** Histograms, rp_pi and s_mu: also each bin's mean separation (d, r_p or s) over its pairs, weighted by w_i w_j with weights (Corrfunc's ravg): the result's ravg, null for an empty bin. Its sums keep the weighted sums' bound (1e-12 of the sum of |w_i w_j u|). Not with within, per_frame, exclude, partials or images all. */
  ravg?: boolean | null;
  /** Histograms, rp_pi, s_mu and theta of sky catalogues of one frame: also each jackknife region's counts (and weighted sums), by the datasets' region labels (a region column, or ?regions=K at upload; 2 to 1000 regions). A pair of points in regions a and b adds to region a's and, if b != a, to region b's, so that the counts without region k's points are the total less region k's (the result's jackknife group). The job is counted one region pair at a time, each pair once, on any kernel. Not with within, per-point statistics, pair lists, partials, per_frame or blocks, nor with two selections that share points. */
  jackknife?: boolean | null;
  /**
   * A dataset id whose atoms name this dataset's: a trajectory without
   * names (XTC, TRR, DCD, NetCDF) takes its elements, atom and residue
   * names, residues and molecules from a GRO or PDB (or any file that
   * names them) of the same system, uploaded as a dataset of its own.
   * Its atoms a frame must equal the trajectory's (422 otherwise).
   * Jobs only: /v1/histogram stores nothing to name (400).
   */
  topology?: string | null;
  /** A name from GET /v1/kernels. */
  kernel?: string | null;
  /** GPU threads per block */
  block_size?: Int | null;
  precision?: "exact" | "fast" | null;
  /** CPU threads (0 = the worker's share). */
  threads?: Int | null;
  /** GPU indices this job may use. */
  devices?: Array<Int> | null;
}

export type JobRequest = JobParams & {
  /** A dataset id (the points */
  dataset: string;
  /** A second dataset id: count every pair of A x B (n_a * n_b pairs; B may be A). */
  dataset_b?: string;
  /**
   * Keep the result current as frames are appended to the
   * dataset (a growing one, ?growing=true): the job runs until
   * the dataset is sealed, then succeeds with the result of every
   * frame; while it runs, its result (GET /v1/jobs/{id}/result)
   * is the latest, of the frames counted so far. Cancelled, it
   * keeps no result. 422 with a sentence for a dataset that does
   * not grow, and for what does not add up frame by frame:
   * per_point, nearest, pairs_within, a frames slice, a
   * dataset_b of several frames or one still growing. 501 in
   * cluster mode.
   */
  follow?: boolean;
};

export type HistogramRequest = JobParams & ({
  /** [x, y, z], or [x, y, z, w] with a weight (every point alike). */
  points: Array<Array<number>>;
  /** One weight per point (used with "weights": true). */
  w?: Array<number>;
} | {
  x: Array<number>;
  y: Array<number>;
  z: Array<number>;
  /** One weight per point. */
  w?: Array<number>;
});

/** Milliseconds. */
export interface Timing {
  queue: number;
  parse: number;
  transfer: number;
  kernel: number;
  total: number;
}

/**
 * The histogram. counts[b] is the number of pairs in bin b: with equal
 * widths floor(d / bucket_width) = b (edges are b * bucket_width),
 * with explicit or log edges edges[b] <= d < edges[b+1]; below counts
 * the pairs under the first edge, overflow those at or beyond the
 * last; total = the number of pairs = sum(counts) + below + overflow.
 * Periodic boxes add g (LAMMPS's compute rdf convention) and
 * coordination; weights add weighted (per-bin sums of w_i * w_j).
 * A count within a radius has statistic "within" and the count.
 * Per-point results (statistic per_point, nearest) hold a row per
 * point of A, one row per frame (per_point_histogram: a row of bins a
 * point, in the point object, every frame's summed) (a frames x points array of arrays
 * over several frames), and index names each row's point; a pair
 * list (statistic pairs) holds the columns i, j, d (and frame over
 * several frames), a pair a position. Every member is a field of the
 * result schema (GET /v1/schema), which test_fields holds this to.
 */
export interface Result {
  /** Points of A */
  n: Int;
  n_b?: Int;
  /** The length unit of A's file (distances, edges and bucket_width are in it); absent when its format does not say. */
  unit?: string;
  /** The selection A came from (absent for the whole dataset); n counts its atoms. */
  select_a?: string;
  /** The selection B came from; n_b counts its atoms. */
  select_b?: string;
  /** With select_b on the same dataset: how the selections paired. self: the same atoms, i < j; distinct: they share atoms, each pair of distinct atoms once; cross: no atom in both, every (a, b); ordered: every (a, b), as asked. */
  pairing?: "self" | "distinct" | "cross" | "ordered";
  exclude?: "molecule";
  /** exclude: the pairs left out (total, and g(r)'s pairs, are the others). */
  excluded?: Int;
  /** per_frame: frame f's pairs (less the excluded), counts, and when periodic its volume and its own g(r). */
  per_frame?: {
    total?: Array<Int>;
    counts?: Array<Array<Int>>;
    volume?: Array<number | null>;
    g?: Array<Array<number | null>>;
    /** pairs_within: each frame's pairs in the list. */
    pairs?: Array<Int>;
    /** each frame's pairs below the first edge. */
    below?: Array<Int>;
  };
  /** blocks: the frames cut into this many consecutive blocks. */
  blocks?: Int;
  /** norm: the normalisation rdf is in. */
  norm?: "rdf" | "density" | "none";
  /** norm: MDAnalysis's InterRDF results.rdf in that norm. */
  rdf?: Array<number>;
  /** partials: the species pairs, S(S+1)/2. */
  partials?: Int;
  /** partials: the species, comma-separated, in order. */
  species?: string;
  /** partials: each species pair (a <= b): its pairs (N_a(N_a-1)/2 or N_a N_b a frame, less the excluded), counts, g(r) and the coordination of b around a (ab) and of a around b (ba). */
  partial?: {
    a?: Array<string>;
    b?: Array<string>;
    total?: Array<Int>;
    below?: Array<Int>;
    n_a?: Array<Int>;
    n_b?: Array<Int>;
    density?: Array<number>;
    counts?: Array<Array<Int>>;
    g?: Array<Array<number>>;
    coordination_ab?: Array<Array<number>>;
    coordination_ba?: Array<Array<number>>;
  };
  /** jackknife: the regions R whose counts follow. */
  regions?: Int;
  /** jackknife: each region's pairs (total) and counts (and weighted sums), a row a region, by the rule that a pair of regions a and b adds to a's and, if b != a, to b's: without region k's points the counts are counts less row k. A row holds every bin, axis 2's within axis 1's for rp_pi and s_mu (buckets x buckets2 values). */
  jackknife?: {
    total?: Array<Int>;
    counts?: Array<Array<Int>>;
    weighted?: Array<Array<number>>;
    /** each region's points of A. */
    n_a?: Array<Int>;
    /** with weights: the sum of their weights. */
    w_a?: Array<number>;
    /** with weights: the sum of their weights' squares. */
    ww_a?: Array<number>;
    /** A x B: each region's points of B. */
    n_b?: Array<Int>;
    w_b?: Array<number>;
    ww_b?: Array<number>;
  };
  /** per_point_histogram: each point of A (rows in index's order): its counts in each bin, its g(r) (periodic), its partners below the first edge, and its partners: the points of B it was measured against, every frame's (its overflow is partners - below - its counts). */
  point?: {
    counts?: Array<Array<Int>>;
    g?: Array<Array<number>>;
    below?: Array<Int>;
    partners?: Array<Int>;
  };
  /** blocks: each block's g(r) and coordination (blocks x bins), their means and the standard errors of the means (sample standard deviation over sqrt(blocks)). */
  block?: {
    g?: Array<Array<number>>;
    coordination?: Array<Array<number>>;
    g_mean?: Array<number>;
    g_sem?: Array<number>;
    coordination_mean?: Array<number>;
    coordination_sem?: Array<number>;
  };
  /** The frames counted: frame f of A with itself (or with frame f of B, or B's one frame); counts, weighted sums and within are their sums. */
  frames?: Int;
  /** Periodic: the box volume; over several frames total / sum_f (P_f / V_f), so that g_k = sum_f counts_f,k / sum_f (P_f V_shell,k / V_f). */
  volume?: number;
  /** Periodic: the job's box, or the file's (each frame's own). */
  box_source?: "job" | "dataset";
  /** Every periodic image within the last edge was counted, an atom's own too ("images": "all"): overflow is not counted (0) and total is the pairs of distinct atoms g(r) is normalised by. */
  images?: "all";
  /** Periodic: the pair density, the sum over frames of each frame's pairs / its volume. */
  density?: number;
  statistic: "histogram" | "within" | "per_point" | "nearest" | "pairs" | "per_point_histogram" | "rp_pi" | "s_mu" | "theta";
  bins?: "width" | "edges";
  bucket_width?: number;
  buckets?: Int;
  edges?: Array<number>;
  /** rp_pi, s_mu: the second axis's bins (pi's or mu's). */
  buckets2?: Int;
  /** rp_pi: pi_max; s_mu: mu_max. */
  max2?: number;
  /** rp_pi, s_mu: the second axis's edges, k * (max2 / buckets2), the last max2. */
  edges2?: Array<number>;
  /** theta: the angles' edges in degrees; edges are their chords. */
  theta_edges?: Array<number>;
  /** ravg: each bin's mean separation (weighted by w_i w_j with weights); null for an empty bin. */
  ravg?: Array<number | null | Array<number | null>>;
  /** rp_pi, s_mu: the line of sight. */
  los?: "z" | "midpoint";
  /** The pairs in each bin; rp_pi and s_mu: buckets rows of buckets2 (axis 1's bin k, then axis 2's). */
  counts?: Array<Int | Array<Int>>;
  weighted?: Array<number | null | Array<unknown>>;
  g?: Array<number | null>;
  coordination?: Array<number | null>;
  /** The radius R (nearest: null when it searched everywhere). */
  radius?: number | null;
  within?: Int;
  weighted_within?: number | null;
  below?: Int;
  /** Per point: each row's point, its index in the dataset (a selection's atoms). */
  index?: Array<Int>;
  /** per_point: each point's neighbours in B within the radius, other than itself (frames x points over several frames). */
  neighbours?: Array<Int | Array<unknown>>;
  /** per_point with weights: the sum of those neighbours' w_j. */
  neighbour_weights?: Array<number | null | Array<unknown>>;
  /** nearest: each point's nearest other point of B, its index in B's dataset; -1 where none is within the radius. */
  nearest?: Array<Int | Array<unknown>>;
  /** nearest: the distance to it (null where none). */
  nearest_d?: Array<number | null | Array<unknown>>;
  /** pairs_within: the pairs in the list. */
  pairs?: Int;
  /** The list's frames (over several frames). */
  frame?: Array<Int>;
  /** Each listed pair's point of A, its index in the dataset (i < j for self pairs). */
  i?: Array<Int>;
  /** Its point of B, its index in B's dataset. */
  j?: Array<Int>;
  /** The pair's distance d. */
  d?: Array<number>;
  overflow?: Int;
  total: Int;
  /** The kernel that ran ("auto" resolved). */
  kernel: string;
  /** Why "auto" chose that kernel (absent when the job named one), e.g. "grid: r_max 5 gives 19x19x19 cells of side >= r_max, which visit about 0.394% of the pairs (the grid pays below 50%)". */
  kernel_reason?: string;
  block_size?: Int;
  /** CPU threads that ran (0 on a GPU). */
  threads?: Int;
  precision: "exact" | "fast";
  /** The counts follow the exactness contract. */
  exact: boolean;
  /** Pairs a float32 kernel redid in binary64 (diagnostics). */
  refined_pairs?: Int;
  device: string;
  timing_ms: Timing;
}

/** A result without its arrays (in job lists). */
export interface ResultSummary {
  n: Int;
  n_b?: Int;
  unit?: string;
  select_a?: string;
  select_b?: string;
  pairing?: "self" | "distinct" | "cross" | "ordered";
  exclude?: "molecule";
  excluded?: Int;
  frames?: Int;
  volume?: number;
  box_source?: "job" | "dataset";
  /** Periodic: the pair density, the sum over frames of each frame's pairs / its volume. */
  density?: number;
  statistic: "histogram" | "within" | "per_point" | "nearest" | "pairs" | "per_point_histogram" | "rp_pi" | "s_mu" | "theta";
  bins?: "width" | "edges";
  bucket_width?: number;
  buckets?: Int;
  buckets2?: Int;
  max2?: number;
  los?: "z" | "midpoint";
  /** The radius R (nearest: null when it searched everywhere). */
  radius?: number | null;
  within?: Int;
  weighted_within?: number | null;
  below?: Int;
  overflow: Int;
  total: Int;
  kernel: string;
  block_size?: Int;
  precision: "exact" | "fast";
  exact: boolean;
  device: string;
  timing_ms: Timing;
}

export interface JobDoc {
  id: string;
  status: "queued" | "running" | "succeeded" | "failed" | "cancelled";
  dataset: string;
  /** The dataset's point count. */
  n: Int;
  /** The second dataset of an A x B job. */
  dataset_b?: string;
  n_b?: Int;
  params: Params;
  /** In lists, ?summary=true and the answers to POST and DELETE, where params leave out an explicit edges list (it may hold millions of numbers): its length. GET /v1/jobs/{id} has the list itself. */
  edges_count?: Int;
  progress: number;
  /** The job follows its growing dataset ("follow": true); absent otherwise. */
  follow?: boolean;
  /** While a job over several frames runs: the frames done (progress x total) and the frames it counts. A following job: the frames its result counts, and the dataset's frames so far. */
  frames?: {
    done?: Int;
    total?: Int;
  };
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  timing_ms: Timing;
  /** Where it ran */
  device: string | null;
  /** Why it failed or that it was cancelled. */
  error?: string;
  /** When DELETE /v1/jobs/{id}/result took the succeeded job's result away (the job then has no result). */
  result_deleted_at?: string;
  /** Once succeeded (a following job's latest while it runs). GET /v1/jobs/{id} gives the full Result; lists give a ResultSummary. */
  result?: Result | ResultSummary;
}

export interface Kernel {
  name: string;
  summary: string;
  /** any: runs on the worker's GPU, or on the CPU where there is none (auto, grid, dm-tree) */
  engine: "cpu" | "cuda" | "any";
  /** This daemon can run it (CUDA kernels need a GPU). */
  available: boolean;
}

export interface Devices {
  engine: "cuda" | "cpu";
  devices: Array<{
    index: Int;
    name: string;
    compute_capability: string;
    multiprocessors: Int;
    /** Bytes. */
    memory_total: Int;
    /** Bytes. */
    memory_free: Int;
  }>;
  cpu: {
    threads: Int;
  };
  /** Why there is no GPU (only when there is none). */
  gpu_unavailable_reason?: string;
}

/** One field of a result, as GET /v1/schema lists it. */
export interface SchemaField {
  name: string;
  group: string | null;
  column: string;
  /** The npz entry ('' when the npz leaves it out). */
  npz: string;
  type: "u64" | "i64" | "f64" | "str" | "bool";
  shape: "scalar" | "bins" | "edges" | "frames" | "frames x bins" | "points" | "frames x points" | "pairs";
  unit: string;
  outputs: Array<"json" | "csv" | "text" | "npz" | "store">;
  help: string;
}
