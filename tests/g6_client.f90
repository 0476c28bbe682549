! A Fortran GRAPE-6 client as NBODY4-era codes are written: it calls
! g6_open, g6_set_j_particle, g6calc_firsthalf, g6calc_lasthalf, ... by
! their Fortran names (gfortran appends the underscore: g6_open_, ...), every
! argument by reference, x(3,n) arrays. It runs a 4th-order Hermite
! integration with a shared adaptive (power-of-two) step twice from one
! Plummer model: through libwebgrav.so and through cpu_*, a tiny f64
! implementation of the same API below, and compares the initial energy
! (to 1e-6), the number of steps (equal) and the final energy error
! (within a small factor).
! Built and run by .ci/test:
!   gfortran -O2 -Wall -Werror tests/g6_client.f90 -L target/debug \
!       -lwebgrav -o target/g6_client_f
!   LD_LIBRARY_PATH=target/debug target/g6_client_f
module cpu_g6
  implicit none
  integer, parameter :: jmem = 256
  double precision :: cm(jmem), ct(jmem), cx(3, jmem), cv(3, jmem), ca2(3, jmem), &
       cj6(3, jmem), ck18(3, jmem), cti
  integer :: cindex(jmem)
contains
  subroutine cpu_set_j(addr, index, tj, mass, k18, j6, a2, v, x)
    integer, intent(in) :: addr, index
    double precision, intent(in) :: tj, mass, k18(3), j6(3), a2(3), v(3), x(3)
    cm(addr + 1) = mass
    ct(addr + 1) = tj
    cindex(addr + 1) = index
    cx(:, addr + 1) = x
    cv(:, addr + 1) = v
    ca2(:, addr + 1) = a2
    cj6(:, addr + 1) = j6
    ck18(:, addr + 1) = k18
  end subroutine cpu_set_j

  ! Forces on ni i-particles from j-particles 0..nj-1, each predicted from
  ! its own time to cti; the j-particle with the i-particle's index skipped.
  subroutine cpu_calc(nj, ni, index, xi, vi, eps2, acc, jerk, pot)
    integer, intent(in) :: nj, ni, index(ni)
    double precision, intent(in) :: xi(3, ni), vi(3, ni), eps2
    double precision, intent(out) :: acc(3, ni), jerk(3, ni), pot(ni)
    integer :: i, q
    double precision :: h, xj(3), vj(3), dr(3), dv(3), r2, rinv, mr3, alpha
    do i = 1, ni
      acc(:, i) = 0
      jerk(:, i) = 0
      pot(i) = 0
      do q = 1, nj
        if (cindex(q) == index(i)) cycle
        h = cti - ct(q)
        xj = cx(:, q) + h * (cv(:, q) + h * (ca2(:, q) + h * (cj6(:, q) + h * 0.75d0 * ck18(:, q))))
        vj = cv(:, q) + h * (2 * ca2(:, q) + h * (3 * cj6(:, q) + h * 3 * ck18(:, q)))
        dr = xj - xi(:, i)
        dv = vj - vi(:, i)
        r2 = sum(dr * dr) + eps2
        rinv = 1 / sqrt(r2)
        mr3 = cm(q) * rinv**3
        alpha = 3 * sum(dr * dv) / r2
        acc(:, i) = acc(:, i) + mr3 * dr
        jerk(:, i) = jerk(:, i) + mr3 * (dv - alpha * dr)
        pot(i) = pot(i) - cm(q) * rinv
      end do
    end do
  end subroutine cpu_calc
end module cpu_g6

module client
  use cpu_g6
  implicit none
  integer, parameter :: n = 64
  double precision, parameter :: eta = 0.02d0, eps2 = 1d0 / 4096, dt_max = 0.125d0, t_end = 0.25d0
  double precision :: m0(n), x0(3, n), v0(3, n)
  double precision :: x(3, n), v(3, n), a(3, n), j(3, n), a2(3, n)
  integer :: idx(n)
  integer(8) :: seed = 20241
  integer, external :: g6_open, g6_close, g6_npipes, g6_set_ti, g6_set_j_particle, g6calc_lasthalf
  external :: g6calc_firsthalf
contains
  double precision function uniform()
    ! Park & Miller's minimal standard generator (fits in 64-bit integers).
    seed = mod(16807_8 * seed, 2147483647_8)
    uniform = dble(seed) / 2147483647d0
  end function uniform

  subroutine isotropic(r, out)
    double precision, intent(in) :: r
    double precision, intent(out) :: out(3)
    double precision :: z, phi, s
    z = 2 * uniform() - 1
    phi = 8 * atan(1d0) * uniform()
    s = sqrt(1 - z * z)
    out = r * [s * cos(phi), s * sin(phi), z]
  end subroutine isotropic

  ! Plummer model in N-body units, centre-of-mass frame.
  subroutine plummer()
    double precision :: scale, r, q, g, cmx(3), cmv(3)
    integer :: i
    scale = 3 * 4 * atan(1d0) / 16
    do i = 1, n
      r = 20
      do while (r > 10)
        r = 1 / sqrt((uniform() * 0.999d0)**(-2d0 / 3) - 1)
      end do
      q = 0
      g = 1
      do while (g > q * q * (1 - q * q)**3.5d0)
        q = uniform()
        g = 0.1d0 * uniform()
      end do
      m0(i) = 1d0 / n
      call isotropic(r * scale, x0(:, i))
      call isotropic(q * sqrt(2d0) * (1 + r * r)**(-0.25d0) / sqrt(scale), v0(:, i))
    end do
    cmx = matmul(x0, m0)
    cmv = matmul(v0, m0)
    do i = 1, n
      x0(:, i) = x0(:, i) - cmx
      v0(:, i) = v0(:, i) - cmv
    end do
  end subroutine plummer

  ! All particles at time t to the library (GRAPE-6 coefficients).
  subroutine send_all(gpu, t)
    logical, intent(in) :: gpu
    double precision, intent(in) :: t
    integer :: i, cluster = 0
    double precision :: ha(3), j6(3), k18(3), dtj = 0
    do i = 1, n
      ha = a(:, i) / 2
      j6 = j(:, i) / 6
      k18 = a2(:, i) / 18
      if (gpu) then
        if (g6_set_j_particle(cluster, i - 1, idx(i), t, dtj, m0(i), k18, j6, ha, &
             v(:, i), x(:, i)) /= 0) stop 1
      else
        call cpu_set_j(i - 1, idx(i), t, m0(i), k18, j6, ha, v(:, i), x(:, i))
      end if
    end do
  end subroutine send_all

  ! Forces at time t on the particles predicted there (xp, vp).
  subroutine forces(gpu, t, xp, vp, fa, fj, fp)
    logical, intent(in) :: gpu
    double precision, intent(in) :: t, xp(3, n), vp(3, n)
    double precision, intent(out) :: fa(3, n), fj(3, n), fp(n)
    integer :: cluster = 0, nj = n, ni = n
    double precision :: h2(n), aold(3, n), j6old(3, n), phiold(n)
    h2 = 0
    aold = 0
    j6old = 0
    phiold = 0
    if (gpu) then
      if (ni > g6_npipes()) stop 1
      if (g6_set_ti(cluster, t) /= 0) stop 1
      call g6calc_firsthalf(cluster, nj, ni, idx, xp, vp, aold, j6old, phiold, eps2, h2)
      if (g6calc_lasthalf(cluster, nj, ni, idx, xp, vp, eps2, h2, fa, fj, fp) /= 0) stop 1
    else
      cti = t
      call cpu_calc(nj, ni, idx, xp, vp, eps2, fa, fj, fp)
    end if
  end subroutine forces

  double precision function energy(fp)
    double precision, intent(in) :: fp(n)
    energy = 0.5d0 * sum(m0 * (sum(v * v, dim=1) + fp))
  end function energy

  subroutine run(gpu, e0, de, steps)
    logical, intent(in) :: gpu
    double precision, intent(out) :: e0, de
    integer, intent(out) :: steps
    double precision :: fa(3, n), fj(3, n), fp(n), xp(3, n), vp(3, n), t, dt, h, crit
    double precision :: s(3), c(3), na, nj, ns, nc
    integer :: i, cluster = 0
    x = x0
    v = v0
    a = 0
    j = 0
    a2 = 0
    if (gpu) then
      if (g6_open(cluster) /= 0) stop 1
    end if
    call send_all(gpu, 0d0)
    call forces(gpu, 0d0, x, v, a, j, fp)
    e0 = energy(fp)
    dt = dt_max
    do i = 1, n
      do while (dt > 0.25d0 * sqrt(eta) * norm2(a(:, i)) / norm2(j(:, i)))
        dt = dt / 2
      end do
    end do
    t = 0
    steps = 0
    do while (t + dt <= t_end)
      call send_all(gpu, t)
      h = dt
      do i = 1, n
        xp(:, i) = x(:, i) + h * (v(:, i) + h / 2 * (a(:, i) + h / 3 * j(:, i)))
        vp(:, i) = v(:, i) + h * (a(:, i) + h / 2 * j(:, i))
      end do
      call forces(gpu, t + h, xp, vp, fa, fj, fp)
      crit = 1d300
      do i = 1, n
        s = (-6 * (a(:, i) - fa(:, i)) - h * (4 * j(:, i) + 2 * fj(:, i))) / h**2
        c = (12 * (a(:, i) - fa(:, i)) + 6 * h * (j(:, i) + fj(:, i))) / h**3
        x(:, i) = xp(:, i) + h**4 / 24 * s + h**5 / 120 * c
        v(:, i) = vp(:, i) + h**3 / 6 * s + h**4 / 24 * c
        a(:, i) = fa(:, i)
        j(:, i) = fj(:, i)
        a2(:, i) = s + h * c
        na = norm2(a(:, i))
        nj = norm2(j(:, i))
        ns = norm2(a2(:, i))
        nc = norm2(c)
        crit = min(crit, sqrt(eta * (na * ns + nj**2) / (nj * nc + ns**2)))
      end do
      t = t + h
      steps = steps + 1
      do while (dt > crit)
        dt = dt / 2
      end do
      if (2 * dt <= crit .and. 2 * dt <= dt_max .and. mod(t, 2 * dt) == 0) dt = 2 * dt
    end do
    ! The energy at the last synchronised time.
    call send_all(gpu, t)
    call forces(gpu, t, x, v, fa, fj, fp)
    de = abs((energy(fp) - e0) / e0)
    if (gpu) then
      if (g6_close(cluster) /= 0) stop 1
    end if
    write (*, '(a, l2, a, f16.12, a, i5, a, es10.3, a, f6.3)') ' gpu', gpu, ': E0 =', e0, &
         ', steps', steps, ', |dE/E| =', de, ', t =', t
  end subroutine run
end module client

program g6_client_f
  use client
  implicit none
  double precision :: e0c, dec, e0g, deg, bound
  integer :: sc, sg, i
  logical :: ok
  call plummer()
  ! GRAPE-6 indices need not be addresses: self-interaction is by index.
  idx = [(500 + 3 * i, i = 1, n)]
  call run(.false., e0c, dec, sc)
  call run(.true., e0g, deg, sg)
  ok = .true.
  write (*, '(a, es10.3, a)') ' initial energy: relative difference', abs(e0g - e0c) / abs(e0c), &
       ' (must be < 1e-6)'
  ok = ok .and. abs(e0g - e0c) < 1d-6 * abs(e0c)
  write (*, '(a, 2i6, a)') ' steps:', sg, sc, ' (must be equal)'
  ok = ok .and. sg == sc
  ! The f64 run's error is the integrator's; double-single forces add
  ! their rounding, ~1e-9 per time unit at this N.
  bound = 3 * dec + 2d-9
  write (*, '(a, es10.3, a, es10.3, a, es10.3, a)') ' final energy error', deg, ' vs', dec, &
       ' (must be <', bound, ', the reference < 1e-6)'
  ok = ok .and. deg < bound .and. dec < 1d-6
  if (ok) then
    print '(a)', ' ok'
  else
    print '(a)', ' FAILED'
    stop 1
  end if
end program g6_client_f
