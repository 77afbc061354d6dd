// diag(A^-1) from a sparse Cholesky factor, by selected inversion (the Takahashi
// recurrence): bench/sparse_oracle.cpp and bench/logistic_oracle.cpp.
#pragma once

#include <Eigen/SparseCore>
#include <vector>

namespace oracle {

// diag(A^-1) from the Cholesky factor of A = L L' (L lower, column-major, each column's
// diagonal first and its rows increasing, as SimplicialLLT stores it), by the Takahashi
// recurrence on L's pattern (bench/sparse_oracle.cpp says how and why it works).
template <typename SpMat>
Eigen::VectorXd selected_inverse_diagonal(const SpMat& l) {
  using Idx = typename SpMat::StorageIndex;
  const Idx n = l.cols();
  const Idx* lp = l.outerIndexPtr();
  const Idx* li = l.innerIndexPtr();
  const double* lx = l.valuePtr();
  std::vector<double> zv(static_cast<size_t>(lp[n]));  // Z on L's pattern
  double* z = zv.data();
  std::vector<double> acc;
  for (Idx j = n - 1; j >= 0; --j) {
    const Idx first = lp[j] + 1, s = lp[j + 1] - first;  // S_j: rows li[first, first + s)
    acc.assign(static_cast<size_t>(s), 0.0);
    double* ac = acc.data();
    // acc = Z[S_j, S_j] * L[S_j, j], Z[S_j, S_j] read from the columns k of S_j: Z_kk and
    // Z_ik for the later i of S_j, which column k holds (S_j's rows after k are in S_k), in
    // the same increasing order: a merge that stops at S_j's last row. When column k holds
    // exactly S_j's later rows (so in the dense trailing block), the merge is a plain loop.
    for (Idx a = 0; a < s; ++a) {
      const Idx k = li[first + a];
      const double lkj = lx[first + a];
      ac[a] += z[lp[k]] * lkj;
      if (lp[k + 1] - lp[k] - 1 == s - a - 1) {
        const double* zk = z + lp[k] + 1;       // Z_ik for i = S_j[a + 1 ..]
        const double* lj = lx + first + a + 1;  // L_ij for the same i
        double sum = 0;
        for (Idx q = 0; q < s - a - 1; ++q) {
          ac[a + 1 + q] += zk[q] * lkj;
          sum += zk[q] * lj[q];
        }
        ac[a] += sum;
        continue;
      }
      Idx b = a + 1;
      for (Idx p = lp[k] + 1; p < lp[k + 1] && b < s; ++p) {
        if (li[p] != li[first + b]) continue;
        ac[b] += z[p] * lkj;
        ac[a] += z[p] * lx[first + b];
        ++b;
      }
    }
    const double ljj = lx[lp[j]];
    double dot = 0;
    for (Idx a = 0; a < s; ++a) {
      z[first + a] = -ac[a] / ljj;
      dot += lx[first + a] * z[first + a];
    }
    z[lp[j]] = (1 / ljj - dot) / ljj;
  }
  Eigen::VectorXd diag(n);
  for (Idx j = 0; j < n; ++j) diag(j) = z[lp[j]];
  return diag;
}

}  // namespace oracle
